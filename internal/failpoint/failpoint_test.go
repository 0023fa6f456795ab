// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package failpoint

import (
	"os"
	"os/exec"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want map[string]int64
	}{
		{"", nil},
		{"  ", nil},
		{"payment-attempt-recorded", map[string]int64{"payment-attempt-recorded": 1}},
		{"payment-attempt-recorded:3, payout-provider-answered", map[string]int64{"payment-attempt-recorded": 3, "payout-provider-answered": 1}},
		{"charge-recorded:0,charge-recorded:x", map[string]int64{"charge-recorded": 1}},
	} {
		got := parse(tc.spec)
		if len(got) != len(tc.want) {
			t.Errorf("parse(%q) = %d points, want %d", tc.spec, len(got), len(tc.want))
		}
		for name, after := range tc.want {
			if got[name] == nil || got[name].after != after {
				t.Errorf("parse(%q)[%s] = %+v, want after %d", tc.spec, name, got[name], after)
			}
		}
	}
}

func TestHitKillsAtTheNthHit(t *testing.T) {
	saved, savedKill := armed, kill
	defer func() { armed, kill = saved, savedKill }()
	kills := 0
	kill = func() { kills++ }
	armed = parse(PaymentAttemptRecorded + ":2")
	Hit(PayoutAttemptRecorded)
	Hit(PaymentAttemptRecorded)
	if kills != 0 {
		t.Fatalf("killed before the second hit")
	}
	Hit(PaymentAttemptRecorded)
	Hit(PaymentAttemptRecorded)
	if kills != 1 {
		t.Fatalf("kills = %d, want exactly 1 (at the second hit)", kills)
	}
	armed = nil
	Hit(PaymentAttemptRecorded)
	if kills != 1 {
		t.Fatal("an unarmed point killed")
	}
}

// TestHitReallyKills runs this test binary as a child with the point armed: the child dies by
// SIGKILL at the point and never prints what follows it.
func TestHitReallyKills(t *testing.T) {
	if os.Getenv("FAILPOINT_CHILD") == "1" {
		Hit(ChargeRecorded)
		os.Stdout.WriteString("survived\n")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHitReallyKills$")
	cmd.Env = append(os.Environ(), "FAILPOINT_CHILD=1", EnvVar+"="+ChargeRecorded)
	out, err := cmd.CombinedOutput()
	if err == nil || string(out) == "survived\n" {
		t.Fatalf("the child survived the failpoint: %v %q", err, out)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 {
		t.Fatalf("the child did not die by a signal: %v", err)
	}
}

// TestEveryPointIsInTheHarness: the fault harness arms Points and ArchivePoints, so a point in
// neither would never be tested under a crash; RefundPoints is a subset of Points.
func TestEveryPointIsInTheHarness(t *testing.T) {
	all := []string{PaymentAttemptRecorded, PaymentProviderAnswered, PayoutAttemptRecorded, PayoutProviderAnswered,
		RefundAttemptRecorded, RefundProviderAnswered, ChargeRecorded, ArchiveCommitted, ArchiveDeleted}
	listed := map[string]int{}
	for _, p := range append(append([]string(nil), Points...), ArchivePoints...) {
		listed[p]++
	}
	for _, p := range all {
		if listed[p] != 1 {
			t.Errorf("point %s is listed %d times in Points and ArchivePoints, want once", p, listed[p])
		}
	}
	if len(listed) != len(all) {
		t.Errorf("Points and ArchivePoints list %d points, want %d", len(listed), len(all))
	}
	for _, p := range RefundPoints {
		found := false
		for _, q := range Points {
			found = found || p == q
		}
		if !found {
			t.Errorf("refund point %s is not in Points", p)
		}
	}
}
