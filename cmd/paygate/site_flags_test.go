// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/paygate/paygate/apiserver"
)

// TestSiteFlags: the site-info flags of `paygate apiserver` (and `paygate dev`) reach the server's
// options, --gateway-name and --gateway-description included; left out, the server's defaults
// apply.
func TestSiteFlags(t *testing.T) {
	t.Setenv("PAYGATE_CHECKOUT_KEY", strings.Repeat("ab", 32))
	parse := func(args ...string) apiserver.SiteInfo {
		t.Helper()
		fs := flag.NewFlagSet("paygate apiserver", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var o apiserverOptions
		o.bindFlags(fs, ":8443")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		opts, err := o.serverOptions()
		if err != nil {
			t.Fatal(err)
		}
		return opts.Site
	}
	got := parse("--site-name=Example Pay", "--site-url=https://www.example.com", "--site-logo=https://cdn.example.com/logo.png",
		"--gateway-name=Example Mobile Money", "--gateway-description=M-Pesa and Tigo Pesa in Tanzania.", "--brand-word=Example")
	want := apiserver.SiteInfo{SiteName: "Example Pay", SiteURL: "https://www.example.com", SiteLogo: "https://cdn.example.com/logo.png",
		GatewayName: "Example Mobile Money", GatewayDescription: "M-Pesa and Tigo Pesa in Tanzania.", BrandWord: "Example"}
	if got != want {
		t.Errorf("site options %+v, want %+v", got, want)
	}
	if got := parse(); got.GatewayName != "" || got.GatewayDescription != "" || got.SiteLogo != "" {
		t.Errorf("without the flags: %+v; want the server's defaults (empty options)", got)
	}
}
