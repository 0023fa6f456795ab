// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// WaitHTTP waits until GET url answers 200, for at most within. alive, when given, is asked
// between tries: a process that exited is reported at once (its error) instead of at the end.
func WaitHTTP(ctx context.Context, url string, within time.Duration, alive func() error) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	c := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if alive != nil {
			if err := alive(); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return errors.New(url + " did not answer 200 within " + within.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
