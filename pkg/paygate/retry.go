// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package paygate

import (
	"context"
	"crypto/tls"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Retries of the endpoint methods (Client.call; Do never retries).
//
// A request is retried only when repeating it cannot act twice: a GET or HEAD always, a POST,
// PUT, PATCH or DELETE only with an Idempotency-Key header (the server answers a repeat with the
// first answer; docs/api.md, Idempotency). It is retried after a 429 or a 503 answer, or after an
// attempt that got no answer (a transport error other than the context's end or a rejected
// certificate), at most MaxRetries times (DefaultMaxRetries when 0, none when negative).
//
// Before a retry it waits the Retry-After header's seconds when the answer has one; a
// Retry-After above MaxRetryAfter is not waited for: the answer is returned. Without one it waits
// 200 ms, 400 ms, 800 ms, ... (at most 5 s), each with jitter: a random time between half and all
// of it. A wait that would end after the context's deadline is not started (the last error is
// returned at once), and a wait ends as soon as the context does.
const (
	// DefaultMaxRetries is the number of retries when Client.MaxRetries is 0: three attempts in
	// all.
	DefaultMaxRetries = 2
	// MaxRetryAfter is the longest Retry-After the client waits for.
	MaxRetryAfter = 30 * time.Second

	backoffBase = 200 * time.Millisecond
	backoffMax  = 5 * time.Second
)

// maxRetries is the number of retries c makes.
func (c *Client) maxRetries() int {
	switch {
	case c.MaxRetries == 0:
		return DefaultMaxRetries
	case c.MaxRetries < 0:
		return 0
	}
	return c.MaxRetries
}

// retryAfter reports whether the request that just failed with err (resp is its answer, nil when
// there was none) is to be sent again, as its retry+1st retry, and how long to wait first.
func (c *Client) retryAfter(ctx context.Context, method string, header http.Header, retry int, resp *Response, err error) (time.Duration, bool) {
	if retry >= c.maxRetries() || !repeatable(method, header) || ctx.Err() != nil {
		return 0, false
	}
	var wait time.Duration
	if resp == nil {
		var certErr *tls.CertificateVerificationError
		if errors.As(err, &certErr) {
			return 0, false
		}
		wait = backoff(retry)
	} else {
		if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
			return 0, false
		}
		d, ok := parseRetryAfter(resp.Header.Get("Retry-After"))
		switch {
		case !ok:
			wait = backoff(retry)
		case d > MaxRetryAfter:
			return 0, false
		default:
			wait = d
		}
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
		return 0, false
	}
	return wait, true
}

// repeatable reports whether a request may be sent twice without acting twice.
func repeatable(method string, header http.Header) bool {
	switch strings.ToUpper(method) {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return hasIdempotencyKey(header)
	}
	return false
}

// hasIdempotencyKey reports whether header holds a non-empty Idempotency-Key, under any spelling
// of the name (Do adds each with Header.Add, which canonicalizes it).
func hasIdempotencyKey(header http.Header) bool {
	for k, vs := range header {
		if strings.EqualFold(k, "Idempotency-Key") {
			for _, v := range vs {
				if v != "" {
					return true
				}
			}
		}
	}
	return false
}

// parseRetryAfter reads a Retry-After in seconds (the form the server sends).
func parseRetryAfter(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	if n > int64(MaxRetryAfter/time.Second) {
		return MaxRetryAfter + time.Second, true
	}
	return time.Duration(n) * time.Second, true
}

// backoff is the wait before the retry+1st retry without a Retry-After: backoffBase doubled per
// retry, at most backoffMax, and a random time between half and all of that.
func backoff(retry int) time.Duration {
	d := backoffMax
	if retry < 8 {
		d = min(backoffBase<<retry, backoffMax)
	}
	return d/2 + rand.N(d/2+1)
}

// wait sleeps d or until ctx ends, with c.sleep when set.
func (c *Client) wait(ctx context.Context, d time.Duration) error {
	if c.sleep != nil {
		return c.sleep(ctx, d)
	}
	return sleepContext(ctx, d)
}

// sleepContext waits d, or returns ctx.Err() as soon as ctx ends.
func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
