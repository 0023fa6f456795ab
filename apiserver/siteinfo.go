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

func (si SiteInfo) withDefaults(publicURL string) SiteInfo {
	if si.SiteName == "" {
		si.SiteName = "Paygate"
	}
	if si.SiteURL == "" {
		si.SiteURL = publicURL
	}
	if si.SiteLogo == "" {
		si.SiteLogo = si.SiteURL + "/static/logo.svg"
	}
	if si.GatewayName == "" {
		si.GatewayName = si.SiteName
	}
	if si.GatewayDescription == "" {
		si.GatewayDescription = "Mobile-money payments: hosted checkout and USSD push."
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

//go:embed openapi.json
var openAPIDocument []byte

func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) {
	writeBody(w, http.StatusOK, openAPIDocument)
}

// OpenAPIDocument is the OpenAPI 3 description of the API, as served.
func OpenAPIDocument() []byte { return openAPIDocument }
