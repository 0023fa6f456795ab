// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package clock holds the settable clock tests inject wherever Paygate takes a time source.
package clock

import (
	"sync"
	"time"
)

// Fake is a settable, concurrency-safe clock: it moves only when told.
type Fake struct {
	mu  sync.Mutex
	now time.Time
}

// NewFake returns a clock standing at start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now is the clock's time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
