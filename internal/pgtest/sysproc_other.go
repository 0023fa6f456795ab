// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build unix && !linux

package pgtest

import "syscall"

// sysProcAttr runs a child in its own process group, as cred when set.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}
