// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "testing"

func TestHostAllowed(t *testing.T) {
	domains := []DomainName{"duka.example", "pay.shop.example"}
	for host, want := range map[string]bool{
		"duka.example": true, "www.duka.example": true, "DUKA.example.": true,
		"evilduka.example": false, "duka.example.evil.test": false, "shop.example": false,
		"x.pay.shop.example": true,
	} {
		if got := HostAllowed(host, domains); got != want {
			t.Errorf("HostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestURLProblem(t *testing.T) {
	allowed := []DomainName{"duka.example"}
	for _, tc := range []struct {
		raw     string
		env     Environment
		allowed []DomainName
		want    string
	}{
		{"https://hooks.duka.example/paygate", EnvironmentProduction, allowed, ""},
		{"http://127.0.0.1:9099/hook", EnvironmentSandbox, nil, ""},
		{"http://hooks.duka.example/paygate", EnvironmentProduction, allowed, "The webhook_url must use HTTPS in production."},
		{"https://evil.test/paygate", EnvironmentSandbox, allowed, "The webhook_url host is not in the merchant's allowed domains."},
		{"ftp://duka.example/x", EnvironmentSandbox, nil, "The webhook_url must be an absolute http or https URL."},
		{"https://user:pw@duka.example/x", EnvironmentSandbox, nil, "The webhook_url must be an absolute http or https URL."},
		{"/relative", EnvironmentSandbox, nil, "The webhook_url must be an absolute http or https URL."},
		{"https://duka.example/" + string(make([]byte, 2048)), EnvironmentSandbox, nil, "The webhook_url must be an absolute http or https URL."},
	} {
		if got := URLProblem("webhook_url", tc.raw, tc.env, tc.allowed); got != tc.want {
			t.Errorf("URLProblem(%.40q, %s) = %q, want %q", tc.raw, tc.env, got, tc.want)
		}
	}
}
