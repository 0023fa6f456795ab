// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build dev

package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/phone"
	"github.com/paygate/paygate/internal/provider"
)

// TestDevProviderObjects checks the provider-backed demo objects `paygate dev` applies: two
// labelled Secrets in their own namespace with every key the adapters need, and a pawaPay TZS
// gateway and a Daraja KES gateway on the fakes' URLs that send sandbox payments to them.
func TestDevProviderObjects(t *testing.T) {
	fakes, err := startDevFakes(logr.Discard(), "http://127.0.0.1:8443"+devPawapayCallbackPath, "http://127.0.0.1:8443"+devDarajaCallbackPath)
	if err != nil {
		t.Fatal(err)
	}
	defer fakes.Close()
	d := fakes.Demo
	if !strings.HasPrefix(d.PawapayURL, "http://127.0.0.1:") || !strings.HasPrefix(d.DarajaURL, "http://127.0.0.1:") {
		t.Fatalf("the fakes do not listen on loopback: %s, %s", d.PawapayURL, d.DarajaURL)
	}
	if d.PawapayToken != fakes.Pawapay.Token || d.DarajaShortCode != "174379" || len(d.DarajaCertificatePEM) == 0 || len(d.DarajaCallbackSecret) < 16 {
		t.Fatalf("demo credentials do not match the fakes: %+v", d)
	}

	secrets := map[string]*corev1.Secret{}
	gateways := map[string]*paygatev1.Gateway{}
	namespaces := 0
	for _, obj := range devProviderObjects(d) {
		switch o := obj.(type) {
		case *corev1.Namespace:
			namespaces++
			if o.Name != devProviderNamespace {
				t.Errorf("namespace %s, want %s", o.Name, devProviderNamespace)
			}
		case *corev1.Secret:
			secrets[o.Name] = o
		case *paygatev1.Gateway:
			gateways[o.Name] = o
		default:
			t.Errorf("unexpected object %T %s", obj, obj.GetName())
		}
		u, err := applyUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			t.Errorf("%s: the apply body has no apiVersion or kind", obj.GetName())
		}
		if _, ok := u.Object["status"]; ok {
			t.Errorf("%s: the apply body carries a status", obj.GetName())
		}
		if _, ok := u.Object["metadata"].(map[string]any)["creationTimestamp"]; ok {
			t.Errorf("%s: the apply body carries a creationTimestamp", obj.GetName())
		}
	}
	if namespaces != 1 || len(secrets) != 2 || len(gateways) != 2 {
		t.Fatalf("got %d namespaces, secrets %v, gateways %v", namespaces, len(secrets), len(gateways))
	}

	pp, dj := gateways[devPawapayGateway], gateways[devDarajaGateway]
	if pp == nil || dj == nil {
		t.Fatalf("gateways %v, want %s and %s", gateways, devPawapayGateway, devDarajaGateway)
	}
	if pp.Spec.Currency != "TZS" || pp.Spec.Provider != paygatev1.ProviderPawapay || pp.Spec.Pawapay.BaseURL != d.PawapayURL ||
		pp.Spec.Pawapay.Provider != "VODACOM_TZA" || pp.Spec.Pawapay.SignedCallbacks {
		t.Errorf("pawaPay gateway: %+v %+v", pp.Spec, pp.Spec.Pawapay)
	}
	if dj.Spec.Currency != "KES" || dj.Spec.Provider != paygatev1.ProviderDaraja || dj.Spec.Daraja.BaseURL != d.DarajaURL ||
		dj.Spec.Daraja.ShortCode != d.DarajaShortCode {
		t.Errorf("Daraja gateway: %+v %+v", dj.Spec, dj.Spec.Daraja)
	}
	for _, gw := range []*paygatev1.Gateway{pp, dj} {
		if !gw.SandboxToProvider() || !gw.IsActive() || gw.Spec.Type != paygatev1.GatewayTypeAutomatic {
			t.Errorf("%s: sandbox payments do not go to the provider, or it is not an active automatic gateway", gw.Name)
		}
		if gw.SimulatesProduction() {
			t.Errorf("%s simulates production", gw.Name)
		}
		// allow_payment_methods picks a gateway by a word of its code or display name.
		word := strings.SplitN(gw.Name, "-", 2)[0]
		if !strings.Contains(strings.ToLower(gw.Spec.DisplayName), word) {
			t.Errorf("%s: display name %q lacks %q", gw.Name, gw.Spec.DisplayName, word)
		}
	}

	ref := pp.Spec.Pawapay.CredentialsSecretRef
	checkSecret(t, secrets, ref.Namespace, ref.Name, provider.CredentialKindPawapay, map[string]string{provider.PawapaySecretToken: d.PawapayToken})
	dref := dj.Spec.Daraja.CredentialsSecretRef
	checkSecret(t, secrets, dref.Namespace, dref.Name, provider.CredentialKindDaraja, map[string]string{
		provider.DarajaSecretConsumerKey: fakes.Daraja.ConsumerKey(), provider.DarajaSecretConsumerSecret: fakes.Daraja.ConsumerSecret(),
		provider.DarajaSecretPasskey: fakes.Daraja.Passkey(), provider.DarajaSecretCallbackSecret: d.DarajaCallbackSecret,
		provider.DarajaSecretInitiatorName: fakes.Daraja.InitiatorName(), provider.DarajaSecretInitiatorPassword: fakes.Daraja.InitiatorPassword(),
		provider.DarajaSecretCertificate: string(fakes.Daraja.CertificatePEM()),
	})

	// The numbers the welcome text offers are valid mobile numbers of their currency's country,
	// as the API requires.
	for _, n := range devFakeNumbers {
		cur := "TZS"
		if n.darajaResult != "" {
			cur = "KES"
		}
		if got, err := phone.NormalizeForCurrency(n.phone, cur); err != nil || got != n.phone {
			t.Errorf("%s in %s: %q, %v", n.phone, cur, got, err)
		}
	}
}

func checkSecret(t *testing.T, secrets map[string]*corev1.Secret, ns, name, kind string, want map[string]string) {
	t.Helper()
	s := secrets[name]
	if s == nil || s.Namespace != ns {
		t.Errorf("no Secret %s/%s", ns, name)
		return
	}
	if s.Labels[paygatev1.LabelCredential] != kind {
		t.Errorf("Secret %s: label %s=%q, want %q", name, paygatev1.LabelCredential, s.Labels[paygatev1.LabelCredential], kind)
	}
	for k, v := range want {
		if string(s.Data[k]) != v {
			t.Errorf("Secret %s: key %s does not hold what the fake accepts", name, k)
		}
	}
}

func TestDevLocalURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8443": "http://127.0.0.1:8443",
		":8443":          "http://127.0.0.1:8443",
		"0.0.0.0:9000":   "http://127.0.0.1:9000",
		"[::]:9000":      "http://127.0.0.1:9000",
		"localhost:80":   "http://localhost:80",
	} {
		if got := devLocalURL(addr); got != want {
			t.Errorf("devLocalURL(%q) = %q, want %q", addr, got, want)
		}
	}
}

// TestProductionBuildHasNoFakes checks that the fakes the dev command runs come only with the dev
// tag: the binary the image holds links neither.
func TestProductionBuildHasNoFakes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range []string{"github.com/paygate/paygate/test/fakepawapay", "github.com/paygate/paygate/test/fakedaraja"} {
		if strings.Contains(string(out), pkg+"\n") {
			t.Errorf("the production build links %s", pkg)
		}
	}
}
