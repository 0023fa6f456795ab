// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"testing"
	"time"
)

// TestCommandsParseTheirFlags builds each subcommand's flag set (a flag defined twice panics)
// and asks for its help, which must not start anything.
func TestCommandsParseTheirFlags(t *testing.T) {
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	stderr := os.Stderr
	os.Stderr = devNull
	defer func() { os.Stderr = stderr }()
	for name, run := range map[string]func([]string) int{"manager": runManager, "apiserver": runAPIServer, "dev": runDev} {
		if code := run([]string{"-h"}); code != 2 {
			t.Errorf("paygate %s -h exited %d, want 2 (usage)", name, code)
		}
	}
}

func TestParseSchedule(t *testing.T) {
	got, err := parseSchedule("0s, 3m,6m")
	if err != nil || len(got) != 3 || got[1].Minutes() != 3 {
		t.Fatalf("parseSchedule = %v, %v", got, err)
	}
	for _, bad := range []string{"", "soon", "-1s", "1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s"} {
		if _, err := parseSchedule(bad); err == nil {
			t.Errorf("parseSchedule(%q) accepted", bad)
		}
	}
}

func TestWorkerFlags(t *testing.T) {
	if err := (&managerOptions{paymentConcurrency: 16, webhookConcurrency: 16}).validateWorkers(); err != nil {
		t.Fatalf("16/16 refused: %v", err)
	}
	for _, bad := range []managerOptions{
		{paymentConcurrency: 0, webhookConcurrency: 16},
		{paymentConcurrency: 16, webhookConcurrency: -1},
		{paymentConcurrency: maxWorkers + 1, webhookConcurrency: 16},
	} {
		if err := bad.validateWorkers(); err == nil {
			t.Errorf("payment %d, webhook %d accepted", bad.paymentConcurrency, bad.webhookConcurrency)
		}
	}
}

func TestLeaderElectionFlags(t *testing.T) {
	ok := managerOptions{leaseDuration: 3 * time.Second, renewDeadline: 2 * time.Second, retryPeriod: 500 * time.Millisecond}
	if err := ok.validateLeaderElection(); err != nil {
		t.Fatalf("3s/2s/500ms refused: %v", err)
	}
	for _, bad := range []managerOptions{
		{leaseDuration: 2 * time.Second, renewDeadline: 2 * time.Second, retryPeriod: 500 * time.Millisecond},
		{leaseDuration: 3 * time.Second, renewDeadline: 500 * time.Millisecond, retryPeriod: 500 * time.Millisecond},
		{leaseDuration: 3 * time.Second, renewDeadline: 2 * time.Second},
	} {
		if err := bad.validateLeaderElection(); err == nil {
			t.Errorf("%s/%s/%s accepted", bad.leaseDuration, bad.renewDeadline, bad.retryPeriod)
		}
	}
}
