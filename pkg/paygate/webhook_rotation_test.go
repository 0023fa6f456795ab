// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package paygate_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/pkg/paygate/signing"
)

// TestWebhookVerifyDuringARotation: a receiver holding the current secret and the pending one
// verifies deliveries signed with either; one holding only the current secret refuses the pending
// one's; a stale timestamp or a malformed signature is refused whatever the secrets; a legacy IPN
// verifies with any of them too.
func TestWebhookVerifyDuringARotation(t *testing.T) {
	pending := []byte("whsec_pendingpendingpendingpendingpendingpendingpe")
	rotating := verifier()
	rotating.MoreSecrets = [][]byte{[]byte("whsec_unrelated"), pending}
	for _, tc := range []struct {
		name    string
		v       paygate.WebhookVerifier
		header  http.Header
		wantErr error
	}{
		{"signed with the current secret", rotating, signedHeader(whSecret, whNow, "payment.completed", whBody), nil},
		{"signed with the pending secret", rotating, signedHeader(pending, whNow, "payment.completed", whBody), nil},
		{"signed with the pending secret, the receiver without it", verifier(), signedHeader(pending, whNow, "payment.completed", whBody), paygate.ErrWebhookSignature},
		{"signed with neither", rotating, signedHeader([]byte("whsec_other"), whNow, "payment.completed", whBody), paygate.ErrWebhookSignature},
		{"signed with the pending secret, too old", rotating, signedHeader(pending, whNow.Add(-time.Hour), "payment.completed", whBody), paygate.ErrWebhookTimestamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.v.Verify(tc.header, whBody)
			if (tc.wantErr == nil) != (err == nil) || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Fatalf("Verify = %v, want %v", err, tc.wantErr)
			}
		})
	}

	ipn := []byte(`{"status":"completed","data":{"trx_id":"trx-1"}}`)
	legacy := rotating
	legacy.Format = paygate.WebhookFormatLegacyIPN
	h := http.Header{}
	h.Set(signing.LegacyIPNHeader, signing.SignLegacyIPN(pending, ipn))
	if _, err := legacy.Verify(h, ipn); err != nil {
		t.Errorf("a legacy IPN signed with the pending secret: %v", err)
	}
	legacy.MoreSecrets = nil
	if _, err := legacy.Verify(h, ipn); !errors.Is(err, paygate.ErrWebhookSignature) {
		t.Errorf("a legacy IPN signed with a secret the receiver lacks: %v", err)
	}
}
