// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package billing

import (
	"regexp"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/names"
)

var (
	subscriptionNamePattern = regexp.MustCompile(`^sub-[a-z2-7]{24}$`) // the Subscription CRD's rule
	trxIDPattern            = regexp.MustCompile(`^trx-[a-z2-7]{24}$`)
)

func TestSubscriptionIDs(t *testing.T) {
	derived := SubscriptionIDForRequest("uid-1", paygatev1.EnvironmentSandbox, "idem-uid-1")
	if !names.Valid(derived) {
		t.Errorf("derived id %q is not 24 characters of base32", derived)
	}
	if again := SubscriptionIDForRequest("uid-1", paygatev1.EnvironmentSandbox, "idem-uid-1"); again != derived {
		t.Errorf("not deterministic: %q then %q", derived, again)
	}
	for name, other := range map[string]string{
		"another merchant":    SubscriptionIDForRequest("uid-2", paygatev1.EnvironmentSandbox, "idem-uid-1"),
		"another environment": SubscriptionIDForRequest("uid-1", paygatev1.EnvironmentProduction, "idem-uid-1"),
		"another key record":  SubscriptionIDForRequest("uid-1", paygatev1.EnvironmentSandbox, "idem-uid-2"),
		"a payment's trx_id":  names.Derive(names.PurposeTrx, "uid-1", "sandbox", "idem-uid-1"),
	} {
		if other == derived {
			t.Errorf("%s derives the same id", name)
		}
	}
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id, err := NewSubscriptionID()
		if err != nil {
			t.Fatal(err)
		}
		if !names.Valid(id) || seen[id] {
			t.Fatalf("random id %q: invalid or repeated", id)
		}
		seen[id] = true
		if name := paygatev1.SubscriptionName(id); !subscriptionNamePattern.MatchString(name) {
			t.Fatalf("name %q breaks the CRD's rule", name)
		}
	}
}

func TestSubscriptionNameAndAPIID(t *testing.T) {
	const id = "qj33hpibayoahnbujh4loofg"
	name := paygatev1.SubscriptionName(id)
	if name != "sub-"+id {
		t.Errorf("name %q", name)
	}
	if got := paygatev1.SubscriptionAPIID(name); got != "sub_"+id {
		t.Errorf("API id %q", got)
	}
	if got := (&paygatev1.Subscription{ObjectMeta: objectMeta(name)}).APIID(); got != "sub_"+id {
		t.Errorf("APIID() = %q", got)
	}
	if back, ok := paygatev1.SubscriptionNameFromAPIID("sub_" + id); !ok || back != name {
		t.Errorf("SubscriptionNameFromAPIID = %q, %v", back, ok)
	}
	for _, bad := range []string{"", "sub_", "sub-" + id, "sub_" + id + "a", "sub_" + id[:23], "sub_QJ33HPIBAYOAHNBUJH4LOOFG", "sub_qj33hpibayoahnbujh4loof1", "sub_../../secrets", "trx-" + id} {
		if got, ok := paygatev1.SubscriptionNameFromAPIID(bad); ok {
			t.Errorf("SubscriptionNameFromAPIID(%q) = %q", bad, got)
		}
	}
}

func TestInvoiceName(t *testing.T) {
	sub := "sub-qj33hpibayoahnbujh4loofg"
	tests := []struct {
		period int32
		want   string
	}{
		{1, "inv-qj33hpibayoahnbujh4loofg-1"},
		{12, "inv-qj33hpibayoahnbujh4loofg-12"},
		{paygatev1.MaxInvoicePeriod, "inv-qj33hpibayoahnbujh4loofg-100000"},
	}
	for _, tt := range tests {
		got := paygatev1.InvoiceName(sub, tt.period)
		if got != tt.want {
			t.Errorf("InvoiceName(%d) = %q, want %q", tt.period, got, tt.want)
		}
		if len(got) > 63 {
			t.Errorf("%q is too long for a label value", got)
		}
	}
	if paygatev1.InvoiceName(sub, 1) == paygatev1.InvoiceName(sub, 11) || paygatev1.InvoiceName(sub, 1) == paygatev1.InvoiceName("sub-aaaaaaaaaaaaaaaaaaaaaaaa", 1) {
		t.Error("different periods or subscriptions share an invoice name")
	}
}

func TestInvoicePaymentName(t *testing.T) {
	first := InvoicePaymentName("invoice-uid-1", 1)
	if !trxIDPattern.MatchString(first) {
		t.Errorf("%q is not a trx_id", first)
	}
	if again := InvoicePaymentName("invoice-uid-1", 1); again != first {
		t.Errorf("not deterministic: %q then %q", first, again)
	}
	for name, other := range map[string]string{
		"the next attempt":     InvoicePaymentName("invoice-uid-1", 2),
		"another invoice":      InvoicePaymentName("invoice-uid-2", 1),
		"a merchant's ref_trx": "trx-" + names.Derive(names.PurposeTrx, "invoice-uid-1", "1"),
	} {
		if other == first {
			t.Errorf("%s has the same trx_id", name)
		}
	}
}

func TestBillingPlanName(t *testing.T) {
	if got := paygatev1.BillingPlanName("duka", paygatev1.EnvironmentSandbox, "gold-monthly"); got != "duka.sandbox.gold-monthly" {
		t.Errorf("got %q", got)
	}
	// Merchants with dots in their names still get distinct plan names: codes and environments
	// have no dots, so the last two parts are always the environment and the code.
	seen := map[string]string{}
	for _, merchant := range []string{"a", "b", "a.sandbox", "a.production", "a.sandbox.x", "a-sandbox"} {
		for _, env := range paygatev1.Environments {
			for _, code := range []string{"x", "sandbox", "production", "sandbox-x"} {
				name := paygatev1.BillingPlanName(merchant, env, code)
				triple := merchant + " " + string(env) + " " + code
				if other, dup := seen[name]; dup {
					t.Errorf("%s and %s share the name %q", other, triple, name)
				}
				seen[name] = triple
			}
		}
	}
}

func objectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
