// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/metrics"
)

// TestAPIServerMetrics: the apiserver's metrics endpoint serves what the apiserver counts.
func TestAPIServerMetrics(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go serveMetrics(ctx, ln)
	metrics.UnsignedRequests.WithLabelValues("sandbox").Inc()
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `paygate_unsigned_requests_total{environment="sandbox"}`) {
		t.Fatalf("status %d, body without the unsigned request counter:\n%.500s", resp.StatusCode, body)
	}
}

// TestAPIServerPprof: --pprof-bind-address serves heap profiles with the runtime's memory figures
// (what the benchmark reads for its heap-per-payment rows).
func TestAPIServerPprof(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go serveMux(ctx, ln, pprofMux())
	resp, err := http.Get("http://" + ln.Addr().String() + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "# HeapAlloc = ") {
		t.Fatalf("status %d, body without the heap figures:\n%.500s", resp.StatusCode, body)
	}
}
