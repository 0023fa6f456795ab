// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"time"

	"github.com/paygate/paygate/internal/clock"
)

// Clock is the suites' settable clock: it starts at the real time and moves only when told.
type Clock = clock.Fake

// NewClock returns a clock at the current real time.
func NewClock() *Clock { return clock.NewFake(time.Now()) }
