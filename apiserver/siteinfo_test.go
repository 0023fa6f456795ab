// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/paygate/paygate/pkg/paygate"
)

// TestSiteInfo: by default site-info names a logo the server itself serves (to anyone, as the
// checkout's assets are), and the gateway's name and description are the operator's when set.
func TestSiteInfo(t *testing.T) {
	const public = "https://pay.example.com"
	for _, tc := range []struct {
		name     string
		site     SiteInfo
		wantLogo string
		wantName string
		wantDesc string
	}{
		{"defaults", SiteInfo{}, public + LogoPath, "Paygate", DefaultGatewayDescription},
		{"site name only", SiteInfo{SiteName: "Example Pay", SiteURL: "https://www.example.com"}, public + LogoPath, "Example Pay", DefaultGatewayDescription},
		{"operator's values", SiteInfo{SiteName: "Example Pay", SiteLogo: "https://cdn.example.com/logo.png",
			GatewayName: "Example Mobile Money", GatewayDescription: "M-Pesa and Tigo Pesa in Tanzania."},
			"https://cdn.example.com/logo.png", "Example Mobile Money", "M-Pesa and Tigo Pesa in Tanzania."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newExchangeFixture(t, func(o *Options) { o.PublicURL, o.Site = public, tc.site })
			info, err := paygate.New(f.srv.URL, f.duka).SiteInfo(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if info["site_logo"] != tc.wantLogo || info["gateway_name"] != tc.wantName || info["gateway_description"] != tc.wantDesc {
				t.Errorf("site_logo %v, gateway_name %v, gateway_description %v; want %q, %q, %q",
					info["site_logo"], info["gateway_name"], info["gateway_description"], tc.wantLogo, tc.wantName, tc.wantDesc)
			}
			logo, ok := strings.CutPrefix(info["site_logo"].(string), public)
			if !ok {
				return // another site's logo
			}
			resp, err := http.Get(f.srv.URL + logo) // no credentials: an <img> fetches it
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(string(body), "<svg ") {
				t.Errorf("GET %s: %d %s %.40q; want 200, an SVG image", logo, resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
		})
	}
}
