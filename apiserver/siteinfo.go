// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	_ "embed"
	"net/http"
)

// SiteInfo is the branding site-info reports (spec 2.7).
type SiteInfo struct {
	SiteName           string `json:"site_name"`
	SiteLogo           string `json:"site_logo"`
	SiteURL            string `json:"site_url"`
	GatewayName        string `json:"gateway_name"`
	GatewayDescription string `json:"gateway_description"`
	// BrandWord names the webhook headers: X-<BrandWord>-Event.
	BrandWord string `json:"-"`
}

// DefaultGatewayDescription is site-info's gateway_description unless the operator sets one.
const DefaultGatewayDescription = "Mobile-money payments: hosted checkout and USSD push."

func (si SiteInfo) withDefaults(publicURL string) SiteInfo {
	if si.SiteName == "" {
		si.SiteName = "Paygate"
	}
	if si.SiteURL == "" {
		si.SiteURL = publicURL
	}
	if si.SiteLogo == "" {
		// The logo this server serves, on its public URL (not the site URL, which may be another
		// site's).
		si.SiteLogo = publicURL + LogoPath
	}
	if si.GatewayName == "" {
		si.GatewayName = si.SiteName
	}
	if si.GatewayDescription == "" {
		si.GatewayDescription = DefaultGatewayDescription
	}
	if si.BrandWord == "" {
		si.BrandWord = "Paygate"
	}
	return si
}

func (s *Server) siteInfo(w http.ResponseWriter, _ *http.Request) {
	si := s.opts.Site
	writeJSON(w, http.StatusOK, map[string]any{
		"site_name":           si.SiteName,
		"site_logo":           si.SiteLogo,
		"site_url":            si.SiteURL,
		"gateway_name":        si.GatewayName,
		"gateway_description": si.GatewayDescription,
		"features": map[string]string{
			"ssl_secured":        "SSL secured",
			"instant_processing": "Instant processing",
			"global_support":     "Global support",
			"mobile_ready":       "Mobile ready",
		},
		"environments": map[string]string{"production": "Production", "sandbox": "Sandbox"},
		"api_version":  "1.0",
		"status":       "active",
	})
}

// LogoPath is where the server serves its own logo, the default site_logo: under the hosted
// checkout's assets, which every public route of the apiserver (an Ingress, docs/deploy.md)
// already reaches.
const LogoPath = "/checkout-assets/logo.svg"

//go:embed checkout/logo.svg
var logoSVG []byte

func (s *Server) logo(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(logoSVG)
}

//go:embed openapi.json
var openAPIDocument []byte

func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) {
	writeBody(w, http.StatusOK, openAPIDocument)
}

// OpenAPIDocument is the OpenAPI 3 description of the API, as served.
func OpenAPIDocument() []byte { return openAPIDocument }
