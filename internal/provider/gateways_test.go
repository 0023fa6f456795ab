// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/test/fakedaraja"
	"github.com/paygate/paygate/test/fakepawapay"
)

const testCallbackSecret = "0123456789abcdef-callback"

func secretsClient(t *testing.T, secrets ...*corev1.Secret) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, s := range secrets {
		b = b.WithObjects(s)
	}
	return b.Build()
}

func credSecret(name, kind string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "paygate-system", Name: name,
		Labels: map[string]string{paygatev1.LabelCredential: kind}}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func pawapayGateway(baseURL string, sandbox paygatev1.GatewaySandboxRouting) *paygatev1.Gateway {
	return &paygatev1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "vodacom-tz", Generation: 1},
		Spec: paygatev1.GatewaySpec{Currency: "TZS", Provider: paygatev1.ProviderPawapay, Sandbox: sandbox,
			Pawapay: &paygatev1.PawapayConfig{BaseURL: baseURL, Provider: "VODACOM_TZA", Country: "TZA",
				CredentialsSecretRef: paygatev1.PawapayCredentialsReference{Namespace: "paygate-system", Name: "pawapay", Key: "token"}}}}
}

func darajaGateway(baseURL string, sandbox paygatev1.GatewaySandboxRouting) *paygatev1.Gateway {
	return &paygatev1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "mpesa-ke", Generation: 1},
		Spec: paygatev1.GatewaySpec{Currency: "KES", Provider: paygatev1.ProviderDaraja, Sandbox: sandbox,
			Daraja: &paygatev1.DarajaConfig{BaseURL: baseURL, ShortCode: fakedaraja.SandboxShortCode,
				CredentialsSecretRef: paygatev1.SecretReference{Namespace: "paygate-system", Name: "daraja"}}}}
}

func darajaSecretData(key, secret string) map[string]string {
	return map[string]string{DarajaSecretConsumerKey: key, DarajaSecretConsumerSecret: secret,
		DarajaSecretPasskey: fakedaraja.SandboxPasskey, DarajaSecretCallbackSecret: testCallbackSecret}
}

func ready(gw *paygatev1.Gateway) *paygatev1.Gateway {
	gw.Status.Conditions = []metav1.Condition{{Type: paygatev1.ConditionProviderReady, Status: metav1.ConditionTrue, ObservedGeneration: gw.Generation}}
	return gw
}

func TestRegistryPicksPawapayAndDaraja(t *testing.T) {
	ctx := context.Background()
	pp := fakepawapay.New(t, fakepawapay.Options{})
	dj := fakedaraja.New(t, fakedaraja.Options{})
	c := secretsClient(t,
		credSecret("pawapay", CredentialKindPawapay, map[string]string{"token": pp.Token}),
		credSecret("daraja", CredentialKindDaraja, darajaSecretData("fake-consumer-key", "fake-consumer-secret")))
	gws := &Gateways{Reader: c, DarajaCallbackURL: "http://127.0.0.1:1/callbacks/daraja"}
	r := &Registry{Sandbox: NewSandbox(SandboxOptions{}), Gateways: gws}

	for _, tc := range []struct {
		name    string
		gw      *paygatev1.Gateway
		env     paygatev1.Environment
		want    string // "sandbox", "pawapay", "daraja" or "" (refused)
		refusal error
	}{
		{"pawapay production", pawapayGateway(pp.URL(), ""), paygatev1.EnvironmentProduction, "pawapay", nil},
		{"pawapay sandbox by default", pawapayGateway(pp.URL(), ""), paygatev1.EnvironmentSandbox, "sandbox", nil},
		{"pawapay sandbox Simulator", pawapayGateway(pp.URL(), paygatev1.SandboxSimulator), paygatev1.EnvironmentSandbox, "sandbox", nil},
		{"pawapay sandbox Provider", pawapayGateway(pp.URL(), paygatev1.SandboxProvider), paygatev1.EnvironmentSandbox, "pawapay", nil},
		{"pawapay production on the provider's sandbox", pawapayGateway(paygatev1.BaseURLSandbox, paygatev1.SandboxProvider), paygatev1.EnvironmentProduction, "", ErrProviderSandboxOnly},
		{"daraja production", darajaGateway(dj.URL(), ""), paygatev1.EnvironmentProduction, "daraja", nil},
		{"daraja sandbox by default", darajaGateway(dj.URL(), ""), paygatev1.EnvironmentSandbox, "sandbox", nil},
		{"daraja sandbox Provider", darajaGateway(dj.URL(), paygatev1.SandboxProvider), paygatev1.EnvironmentSandbox, "daraja", nil},
	} {
		p, err := r.For(ctx, ready(tc.gw), tc.env)
		if tc.want == "" {
			if !errors.Is(err, tc.refusal) || p != nil {
				t.Errorf("%s: For = %v, %v; want %v", tc.name, p, err, tc.refusal)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		inst, ok := p.(instrumented)
		if ir, refunds := p.(instrumentedRefunder); refunds {
			inst, ok = ir.instrumented, true
		}
		if !ok {
			t.Fatalf("%s: %T is not instrumented", tc.name, p)
		}
		var got string
		switch inst.p.(type) {
		case *Sandbox:
			got = "sandbox"
		case *Pawapay:
			got = "pawapay"
		case *Daraja:
			got = "daraja"
		}
		if got != tc.want || inst.name != tc.want {
			t.Errorf("%s: For gave %s (%s), want %s", tc.name, got, inst.name, tc.want)
		}
	}
}

func TestGatewaysCacheAdaptersUntilTheSecretChanges(t *testing.T) {
	ctx := context.Background()
	dj := fakedaraja.New(t, fakedaraja.Options{})
	secret := credSecret("daraja", CredentialKindDaraja, darajaSecretData("fake-consumer-key", "fake-consumer-secret"))
	c := secretsClient(t, secret)
	gws := &Gateways{Reader: c, DarajaCallbackURL: "http://127.0.0.1:1/callbacks/daraja"}
	gw := darajaGateway(dj.URL(), "")
	a, err := gws.Daraja(ctx, gw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gws.Check(ctx, gw); err != nil {
		t.Fatal(err)
	}
	if _, err := gws.Check(ctx, gw); err != nil {
		t.Fatal(err)
	}
	if n := dj.TokenCount(); n != 1 {
		t.Errorf("two checks fetched %d tokens, want 1 (the adapter and its token are cached)", n)
	}
	b, _ := gws.Daraja(ctx, gw)
	if a != b {
		t.Error("the adapter was rebuilt although neither the gateway nor its Secret changed")
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
		t.Fatal(err)
	}
	secret.Data["passkey"] = []byte("another")
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if b, _ = gws.Daraja(ctx, gw); a == b {
		t.Error("the adapter was kept after its Secret changed")
	}
	gw.Generation++
	if c, _ := gws.Daraja(ctx, gw); c == b {
		t.Error("the adapter was kept after the gateway changed")
	}
}

func TestGatewaysCheck(t *testing.T) {
	ctx := context.Background()
	pp := fakepawapay.New(t, fakepawapay.Options{})
	dj := fakedaraja.New(t, fakedaraja.Options{})
	const pawapayWrongToken = "wrong-token-value-0001"
	const darajaWrongSecret = "wrong-consumer-secret-0002"

	t.Run("pawapay limits", func(t *testing.T) {
		c := secretsClient(t, credSecret("pawapay", CredentialKindPawapay, map[string]string{"token": pp.Token}))
		got, err := (&Gateways{Reader: c}).Check(ctx, pawapayGateway(pp.URL(), ""))
		if err != nil {
			t.Fatal(err)
		}
		if got.MinAmount != "100" || got.MaxAmount != "5000000" || got.Decimals != 0 {
			t.Errorf("Check = %+v, want 100..5000000, 0 decimals", got)
		}
	})
	t.Run("daraja whole shillings", func(t *testing.T) {
		c := secretsClient(t, credSecret("daraja", CredentialKindDaraja, darajaSecretData("fake-consumer-key", "fake-consumer-secret")))
		got, err := (&Gateways{Reader: c, DarajaCallbackURL: "http://127.0.0.1:1/cb"}).Check(ctx, darajaGateway(dj.URL(), ""))
		if err != nil || got.Decimals != 0 {
			t.Errorf("Check = %+v, %v; want 0 decimals", got, err)
		}
	})
	for _, tc := range []struct {
		name   string
		secret *corev1.Secret
		gw     *paygatev1.Gateway
		reason string
	}{
		{"pawapay Secret missing", nil, pawapayGateway(pp.URL(), ""), ReasonSecretMissing},
		{"pawapay key missing", credSecret("pawapay", CredentialKindPawapay, map[string]string{"apiToken": pp.Token}), pawapayGateway(pp.URL(), ""), ReasonSecretKeyMissing},
		{"pawapay wrong token", credSecret("pawapay", CredentialKindPawapay, map[string]string{"token": pawapayWrongToken}), pawapayGateway(pp.URL(), ""), ReasonCredentialsRejected},
		{"pawapay unreachable", credSecret("pawapay", CredentialKindPawapay, map[string]string{"token": pp.Token}), pawapayGateway("http://127.0.0.1:1", ""), ReasonProviderUnreachable},
		{"daraja key missing", credSecret("daraja", CredentialKindDaraja, map[string]string{DarajaSecretConsumerKey: "fake-consumer-key"}), darajaGateway(dj.URL(), ""), ReasonSecretKeyMissing},
		{"daraja wrong secret", credSecret("daraja", CredentialKindDaraja, darajaSecretData("fake-consumer-key", darajaWrongSecret)), darajaGateway(dj.URL(), ""), ReasonCredentialsRejected},
		{"daraja unreachable", credSecret("daraja", CredentialKindDaraja, darajaSecretData("fake-consumer-key", "fake-consumer-secret")), darajaGateway("http://127.0.0.1:1", ""), ReasonProviderUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c client.Client
			if tc.secret != nil {
				c = secretsClient(t, tc.secret)
			} else {
				c = secretsClient(t)
			}
			_, err := (&Gateways{Reader: c, DarajaCallbackURL: "http://127.0.0.1:1/cb"}).Check(ctx, tc.gw)
			var ge *GatewayError
			if !errors.As(err, &ge) || ge.Reason != tc.reason {
				t.Fatalf("Check error = %v; want reason %s", err, tc.reason)
			}
			for _, s := range []string{ge.Message, ge.Error(), fmt.Sprintf("%+v", err)} {
				for _, secret := range []string{pp.Token, pawapayWrongToken, darajaWrongSecret, "fake-consumer-secret", fakedaraja.SandboxPasskey, testCallbackSecret} {
					if strings.Contains(s, secret) {
						t.Errorf("the error shows a secret: %q", s)
					}
				}
			}
		})
	}
}
