// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package pgtest

import "syscall"

// sysProcAttr runs a child in its own process group, as cred when set, and kills it if the test
// binary dies first, so no server outlives its tests.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred, Pdeathsig: syscall.SIGKILL}
}
