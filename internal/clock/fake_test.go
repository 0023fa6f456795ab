// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package clock

import (
	"testing"
	"time"
)

func TestFakeMovesOnlyWhenTold(t *testing.T) {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	c := NewFake(start)
	if !c.Now().Equal(start) {
		t.Fatalf("Now() = %v, want %v", c.Now(), start)
	}
	c.Advance(90 * time.Second)
	if want := start.Add(90 * time.Second); !c.Now().Equal(want) {
		t.Fatalf("after Advance: %v, want %v", c.Now(), want)
	}
}
