// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build dev

package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/console"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/internal/kube"
)

func demoMerchant(name string, status paygatev1.BusinessStatus, id int64) *paygatev1.Merchant {
	m := &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Namespace: devNamespace, Name: name}}
	m.Spec.DisplayName = name
	m.Spec.BusinessStatus = status
	m.Status.ID = id
	return m
}

func credentialSecret(merchant string, env paygatev1.Environment, set credentials.Set) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: devNamespace, Name: credentials.SecretName(merchant, env)}, Data: set.Data()}
}

func webhookSecret(merchant, secret string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: devNamespace, Name: credentials.WebhookSecretName(merchant)},
		Data: map[string][]byte{credentials.KeySigningSecret: []byte(secret)}}
}

// TestCredentialsFileFollowsCredentials: credentials.env is written with what exists, and written
// again, saying what changed, when the pending merchant is approved and its production keys
// appear, and when the approved merchant's sandbox keys are rotated; nothing is written again
// while nothing changed.
func TestCredentialsFileFollowsCredentials(t *testing.T) {
	ctx := context.Background()
	sandbox := credentials.Set{BusinessID: "test_mk_duka", APIKey: "test_pk_1", APISecret: "test_sk_1"}
	c := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(
		demoMerchant("duka-online", paygatev1.BusinessApproved, 1),
		demoMerchant("kahawa-cafe", paygatev1.BusinessPending, 2),
		credentialSecret("duka-online", paygatev1.EnvironmentSandbox, sandbox),
		credentialSecret("duka-online", paygatev1.EnvironmentProduction, credentials.Set{BusinessID: "live_mk_duka", APIKey: "live_pk_1", APISecret: "live_sk_1"}),
		credentialSecret("kahawa-cafe", paygatev1.EnvironmentSandbox, credentials.Set{BusinessID: "test_mk_kahawa", APIKey: "test_pk_2", APISecret: "test_sk_2"}),
		webhookSecret("duka-online", "whsec_1"), webhookSecret("kahawa-cafe", "whsec_2"),
	).Build()
	path := filepath.Join(t.TempDir(), "state", "credentials.env")
	f := &credentialsFile{c: c, path: path, baseURL: "http://127.0.0.1:8443",
		owner: &console.DemoUser{Email: "owner@duka-online.example", Password: "pw", TOTPSecret: "TOTP"}}

	read := func() map[string]string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return exports(string(b))
	}
	refresh := func(want ...string) {
		t.Helper()
		changes, err := f.refresh(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			want = nil
		}
		if !reflect.DeepEqual(changes, want) {
			t.Errorf("changes %q, want %q", changes, want)
		}
	}

	refresh() // the first write reports nothing
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("credentials.env: %v, mode %v; want mode 0600", err, st.Mode().Perm())
	}
	env := read()
	for k, want := range map[string]string{
		"PAYGATE_BASE_URL": "http://127.0.0.1:8443", "PAYGATE_ENVIRONMENT": "sandbox", "PAYGATE_MERCHANT_KEY": "test_mk_duka",
		"PAYGATE_API_KEY": "test_pk_1", "PAYGATE_API_SECRET": "test_sk_1", "DUKA_ONLINE_PRODUCTION_API_KEY": "live_pk_1",
		"KAHAWA_CAFE_SANDBOX_API_KEY": "test_pk_2", "KAHAWA_CAFE_WEBHOOK_SECRET": "whsec_2", "PAYGATE_CONSOLE_PASSWORD": "pw",
	} {
		if env[k] != want {
			t.Errorf("%s=%q, want %q", k, env[k], want)
		}
	}
	if _, ok := env["KAHAWA_CAFE_PRODUCTION_API_KEY"]; ok {
		t.Error("production credentials of the pending merchant")
	}
	refresh() // nothing changed

	// kubectl patch merchant kahawa-cafe businessStatus=approved: the controller makes its
	// production credentials.
	var kahawa paygatev1.Merchant
	if err := c.Get(ctx, client.ObjectKey{Namespace: devNamespace, Name: "kahawa-cafe"}, &kahawa); err != nil {
		t.Fatal(err)
	}
	kahawa.Spec.BusinessStatus = paygatev1.BusinessApproved
	if err := c.Update(ctx, &kahawa); err != nil {
		t.Fatal(err)
	}
	refresh() // the business line's comment changed, no credential yet
	if err := c.Create(ctx, credentialSecret("kahawa-cafe", paygatev1.EnvironmentProduction, credentials.Set{BusinessID: "live_mk_kahawa", APIKey: "live_pk_2", APISecret: "live_sk_2"})); err != nil {
		t.Fatal(err)
	}
	refresh("KAHAWA_CAFE_PRODUCTION_* added")
	if env := read(); env["KAHAWA_CAFE_PRODUCTION_API_KEY"] != "live_pk_2" || env["KAHAWA_CAFE_PRODUCTION_API_SECRET"] != "live_sk_2" || env["PAYGATE_API_KEY"] != "test_pk_1" {
		t.Errorf("after the approval: %v", env)
	}

	// A rotation of duka-online's sandbox keys: its set and the defaults change.
	rotated := credentialSecret("duka-online", paygatev1.EnvironmentSandbox, credentials.Set{BusinessID: "test_mk_duka", APIKey: "test_pk_3", APISecret: "test_sk_3"})
	if err := c.Update(ctx, rotated); err != nil {
		t.Fatal(err)
	}
	refresh("DUKA_ONLINE_SANDBOX_* changed", "PAYGATE_* changed")
	if env := read(); env["PAYGATE_API_KEY"] != "test_pk_3" || env["PAYGATE_API_SECRET"] != "test_sk_3" {
		t.Errorf("after the rotation: %v", env)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".credentials.env.*")); len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}
