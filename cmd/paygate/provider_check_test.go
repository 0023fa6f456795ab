// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/test/fakepawapay"
)

// TestProviderCheck: `paygate provider check` calls the gateway's provider (the pawaPay fake, over
// real HTTP) with the token of its Secret, prints what it answered, and never prints the token;
// a wrong token, a gateway of another provider and usage errors exit non-zero.
func TestProviderCheck(t *testing.T) {
	pawapay := fakepawapay.New(t, fakepawapay.Options{})
	gateway := func(name string, mods ...func(*paygatev1.Gateway)) *paygatev1.Gateway {
		g := &paygatev1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: paygatev1.GatewaySpec{
			DisplayName: "Vodacom", Currency: "TZS", Type: paygatev1.GatewayTypeAutomatic, Provider: paygatev1.ProviderPawapay,
			Pawapay: &paygatev1.PawapayConfig{BaseURL: pawapay.URL(), Provider: "VODACOM_TZA",
				CredentialsSecretRef: paygatev1.PawapayCredentialsReference{Namespace: "paygate-system", Name: "pawapay", Key: "token"}},
		}}
		for _, m := range mods {
			m(g)
		}
		return g
	}
	secret := func(token string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "paygate-system", Name: "pawapay",
			Labels: map[string]string{paygatev1.LabelCredential: provider.CredentialKindPawapay}},
			Data: map[string][]byte{"token": []byte(token)}}
	}
	for _, tt := range []struct {
		name     string
		objs     []client.Object
		gateway  string
		want     int
		contains string
	}{
		{"a usable provider", []client.Object{gateway("vodacom-tz"), secret(pawapay.Token)}, "vodacom-tz", 0, "usable"},
		{"a wrong token", []client.Object{gateway("vodacom-tz"), secret("not-the-token")}, "vodacom-tz", 1, "CredentialsRejected"},
		{"no Secret", []client.Object{gateway("vodacom-tz")}, "vodacom-tz", 1, "SecretMissing"},
		{"a sandbox gateway", []client.Object{gateway("sim", func(g *paygatev1.Gateway) {
			g.Spec.Provider, g.Spec.Pawapay = paygatev1.ProviderSandbox, nil
		})}, "sim", 1, "pawapay and daraja gateways"},
		{"no such gateway", nil, "nowhere", 1, "reading gateway nowhere"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(tt.objs...).Build()
			var stdout, stderr bytes.Buffer
			code := checkGatewayProvider(context.Background(), c, tt.gateway, &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != tt.want || !strings.Contains(out, tt.contains) {
				t.Fatalf("exit %d, output %q; want %d and %q", code, out, tt.want, tt.contains)
			}
			if strings.Contains(out, pawapay.Token) {
				t.Fatalf("the output shows the token: %q", out)
			}
		})
	}
	var stderr bytes.Buffer
	if code := runProvider([]string{"check"}, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "Usage") {
		t.Errorf("no gateway named: exit %d, %q; want 2 and the usage", code, stderr.String())
	}
}
