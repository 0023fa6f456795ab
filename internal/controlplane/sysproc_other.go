// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package controlplane

import "syscall"

// sysProcAttr runs kube-controller-manager as any child (the parent's death does not end it
// here: Stop does).
func sysProcAttr() *syscall.SysProcAttr { return nil }
