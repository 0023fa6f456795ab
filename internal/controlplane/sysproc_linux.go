// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controlplane

import "syscall"

// sysProcAttr runs kube-controller-manager in its own process group, so that a Ctrl-C in the
// terminal reaches only the parent, which stops it in order, and kills it if the parent dies
// first, so that it never outlives the control plane.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
