// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/internal/kube"
)

// TestSettingsShowARotationInProgress: during an API key rotation's overlap the settings page shows
// the replaced key, masked, and when it stops working; after the overlap it does not; a pending
// webhook signing secret is shown as waiting for activation. No key or secret appears whole.
func TestSettingsShowARotationInProgress(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	m := merchant("shop-ns", "shop")
	m.Status.WebhookSigningSecretPendingSince = &metav1.Time{Time: now.Add(-time.Hour)}
	set := credentials.Set{BusinessID: "test_mk_shop", APIKey: "test_pk_newnewnewnewnewnew", APISecret: "test_sk_newsecretnewsecret",
		Previous: &credentials.Previous{APIKey: "test_pk_oldoldoldoldoldold", APISecret: "test_sk_oldsecretoldsecret", Expires: now.Add(2 * time.Hour)}}
	apiSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop-ns", Name: credentials.SecretName("shop", paygatev1.EnvironmentSandbox)}, Data: set.Data()}
	webhook := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop-ns", Name: credentials.WebhookSecretName("shop")},
		Data: map[string][]byte{credentials.KeySigningSecret: []byte("whsec_currentcurrent"), credentials.KeyPendingSigningSecret: []byte("whsec_pendingpending")}}
	cl := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(m, apiSecret, webhook).Build()
	clk := clocktesting.NewFakePassiveClock(now)
	c := New(Options{Cache: cl, APIReader: cl, Writer: cl, Clock: clk, PublicURL: "http://console.test"})
	p := &principal{token: "shop-ns.token", session: &paygatev1.ConsoleSession{},
		user: &paygatev1.ConsoleUser{Spec: paygatev1.ConsoleUserSpec{Email: "owner@shop.example", Role: paygatev1.ConsoleOwner}}, merchant: m}
	page := func(lang string) string {
		r := httptest.NewRequest(http.MethodGet, "http://console.test"+Prefix+"/settings?lang="+lang, nil)
		r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
		w := httptest.NewRecorder()
		c.settings(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("settings answered %d", w.Code)
		}
		return w.Body.String()
	}
	for lang, words := range map[string][]string{"en": {"works until", "waits for activation"}, "sw": {"unafanya kazi hadi", "inasubiri kuwashwa"}} {
		body := page(lang)
		for _, want := range append(words, mask(set.Previous.APIKey)) {
			if !strings.Contains(body, want) {
				t.Errorf("%s: the page does not say %q", lang, want)
			}
		}
		for _, secret := range []string{set.APIKey, set.APISecret, set.Previous.APIKey, set.Previous.APISecret, "whsec_currentcurrent", "whsec_pendingpending"} {
			if strings.Contains(body, secret) {
				t.Errorf("%s: the page shows %q whole", lang, secret)
			}
		}
	}
	clk.SetTime(now.Add(2 * time.Hour))
	if body := page("en"); strings.Contains(body, mask(set.Previous.APIKey)) || strings.Contains(body, "works until") {
		t.Error("the replaced key is still shown after its overlap")
	}
}
