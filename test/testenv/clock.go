// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// Clock is the suites' settable clock (k8s.io/utils/clock/testing): it starts at the real time
// and moves only when told (Step, SetTime).
type Clock = testingclock.FakeClock

// NewClock returns a clock at the current real time.
func NewClock() *Clock { return testingclock.NewFakeClock(time.Now()) }
