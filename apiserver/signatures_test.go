package apiserver

import (
	"net/http"
	"testing"
)

// TestSignaturesDisabled: the administrator switch drops X-Timestamp and X-Signature, and nothing
// else: the environment, business ID and API key are still checked.
func TestSignaturesDisabled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		disabled bool
		apiKey   string
		want     int
	}{
		{"unsigned, signatures on", false, "", http.StatusUnauthorized},
		{"unsigned, signatures off", true, "", http.StatusOK},
		{"wrong key, signatures off", true, "key-wrong", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newExchangeFixture(t, func(o *Options) { o.SignaturesDisabled = tc.disabled })
			req, err := http.NewRequest(http.MethodGet, f.srv.URL+"/api/v1/site-info", nil)
			if err != nil {
				t.Fatal(err)
			}
			key := f.duka.APIKey
			if tc.apiKey != "" {
				key = tc.apiKey
			}
			req.Header.Set("X-Environment", f.duka.Environment)
			req.Header.Set("X-Merchant-Key", f.duka.MerchantKey)
			req.Header.Set("X-API-Key", key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}
