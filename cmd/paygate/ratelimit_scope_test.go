// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import "testing"

func TestRateLimitScope(t *testing.T) {
	for _, tt := range []struct {
		flag, namespace string
		want            string
		warned, invalid bool
	}{
		{flag: "", namespace: "paygate-system", want: scopeCluster},
		{flag: "cluster", namespace: "paygate-system", want: scopeCluster},
		{flag: "replica", namespace: "paygate-system", want: scopeReplica},
		{flag: "replica", namespace: "", want: scopeReplica},
		{flag: "", namespace: "", want: scopeReplica, warned: true},
		{flag: "cluster", namespace: "", want: scopeReplica, warned: true},
		{flag: "global", namespace: "paygate-system", invalid: true},
		{flag: "Cluster", namespace: "paygate-system", invalid: true},
	} {
		scope, why, err := rateLimitScope(tt.flag, tt.namespace)
		if (err != nil) != tt.invalid || scope != tt.want || (why != "") != tt.warned {
			t.Errorf("rateLimitScope(%q, %q) = %q, %q, %v; want %q, warned %v, invalid %v",
				tt.flag, tt.namespace, scope, why, err, tt.want, tt.warned, tt.invalid)
		}
	}
}
