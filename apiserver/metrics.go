// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"net/http"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/metrics"
)

// The labels of the API's metrics come from fixed sets, whatever a client sends: the route is the
// pattern a request was routed by, never its path (a path carries IDs, and a client can send any
// number of different ones), and the method is a standard one.

// routeOther is the route label of a request no route pattern serves (404 NOT_FOUND, a path in
// another spelling).
const routeOther = "other"

// routeLabel is the route label of a ServeMux pattern: the pattern without its method
// ("GET /checkout/{trx_id}" is "/checkout/{trx_id}"); the catch-all "/" and no pattern are
// routeOther.
func routeLabel(pattern string) string {
	if _, path, ok := strings.Cut(pattern, " "); ok {
		pattern = path
	}
	if pattern == "" || pattern == "/" {
		return routeOther
	}
	return pattern
}

// methodLabel is the method label of a request: a method of RFC 9110 or PATCH, else "other".
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "other"
}

// codeLabels are the code label of each status class.
var codeLabels = [...]string{"other", "1xx", "2xx", "3xx", "4xx", "5xx"}

// codeLabel is the status class of a response status ("2xx", "4xx", "5xx", ...).
func codeLabel(status int) string {
	if c := status / 100; c >= 1 && c < len(codeLabels) {
		return codeLabels[c]
	}
	return codeLabels[0]
}

// observeRequest counts one response of route (a routeLabel).
func observeRequest(route, method string, status int, elapsed time.Duration) {
	method = methodLabel(method)
	metrics.APIRequests.WithLabelValues(route, method, codeLabel(status)).Inc()
	metrics.APIRequestDuration.WithLabelValues(route, method).Observe(elapsed.Seconds())
	if status == http.StatusTooManyRequests {
		metrics.APIRateLimited.WithLabelValues(route).Inc()
	}
}
