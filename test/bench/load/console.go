// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"time"
)

// consoleList is the console-list scenario: the bulk merchant's viewer signs in once (one
// session shared by every client of the run, as one person's browser tabs would share it), then
// each operation is the console's first page of payments, which must show 50.
func (r *runner) consoleList() Op {
	jar, _ := cookiejar.New(nil)
	conns := max(r.f.Concurrency, 64)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: 90 * time.Second}}
	var once sync.Once
	var signInErr error
	return func(ctx context.Context, _ int64, _ time.Time) error {
		once.Do(func() { signInErr = r.consoleSignIn(ctx, hc) })
		if signInErr != nil {
			return signInErr
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.cfg.APIURL+"/console/payments?env=sandbox", nil)
		if err != nil {
			return err
		}
		res, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			return err
		}
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("the console's payments page answered %d", res.StatusCode)
		}
		if n := strings.Count(string(b), `<a href="/console/payments/trx-`); n != 50 {
			return fmt.Errorf("the console's payments page shows %d payments, not 50", n)
		}
		return nil
	}
}

// consoleSignIn signs the configured viewer in (no second factor: a viewer has none).
func (r *runner) consoleSignIn(ctx context.Context, hc *http.Client) error {
	if r.cfg.ConsoleEmail == "" {
		return errors.New("the config names no console user")
	}
	form := url.Values{"email": {r.cfg.ConsoleEmail}, "password": {r.cfg.ConsolePassword}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.cfg.APIURL+"/console/sign-in", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("signing in to the console: %w", err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/console/" {
		return fmt.Errorf("signing in to the console: answered %d at %s", res.StatusCode, res.Request.URL.Path)
	}
	return nil
}
