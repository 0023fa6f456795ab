// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package kube

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// storedPayment decodes a settled payment as an informer does: every string its own copy.
func storedPayment(t *testing.T, name string) *paygatev1.Payment {
	t.Helper()
	raw := `{"apiVersion":"paygate.dev/v1alpha1","kind":"Payment","metadata":{"name":"` + name + `","namespace":"shop",
	"uid":"` + name + `-uid","labels":{"paygate.dev/merchant":"duka","paygate.dev/environment":"sandbox"},
	"annotations":{"paygate.dev/provider-callback":"cb-1"},
	"managedFields":[{"manager":"paygate","operation":"Update","apiVersion":"paygate.dev/v1alpha1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},
	"spec":{"merchantRef":{"name":"duka"},"environment":"sandbox","merchantReference":"ref-` + name + `","amount":"1500.00","currency":"TZS",
	"mode":"push","customer":{"phone":"+255712400100"},"description":"Order","webhookURL":"https://duka.example/hooks",
	"gateways":["tzs-sandbox"],"expiresAt":"2026-11-24T08:00:00Z","pushRequest":{"sequence":1,"phone":"+255712400100","gateway":"tzs-sandbox","requestedAt":"2026-11-24T07:00:00.000000Z"}},
	"status":{"phase":"success","gateway":"tzs-sandbox","fee":"37.50","netAmount":"1462.50","remark":"Sandbox",
	"attempts":[{"sequence":1,"reference":"shop.` + name + `.1","gateway":"tzs-sandbox","phase":"Succeeded","fees":{"percent":"2.5","fixed":"0"},"startedAt":"2026-11-24T07:00:00.000000Z"}],
	"conditions":[{"type":"Ready","status":"True","observedGeneration":1,"lastTransitionTime":"2026-11-24T07:00:01Z","reason":"PaymentSucceeded","message":"Payment settled"}]}}`
	p := &paygatev1.Payment{}
	if err := json.Unmarshal([]byte(raw), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCompactPayment(t *testing.T) {
	a, b := storedPayment(t, "trx-a"), storedPayment(t, "trx-b")
	want := a.DeepCopy()
	want.ManagedFields = nil
	for _, p := range []*paygatev1.Payment{a, b} {
		if _, err := compactPayment(p); err != nil {
			t.Fatal(err)
		}
	}
	if !equality.Semantic.DeepEqual(a, want) {
		t.Fatalf("compaction changed a value:\n got %+v\nwant %+v", a, want)
	}
	same := func(what, x, y string) {
		t.Helper()
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are not one string in memory", what, x, y)
		}
	}
	same("namespace", a.Namespace, b.Namespace)
	same("label value", a.Labels[paygatev1.LabelMerchant], b.Labels[paygatev1.LabelMerchant])
	same("merchant", a.Spec.MerchantRef.Name, b.Spec.MerchantRef.Name)
	same("currency", string(a.Spec.Currency), string(b.Spec.Currency))
	same("gateway", string(a.Spec.Gateways[0]), string(b.Spec.Gateways[0]))
	same("net amount", string(a.Status.NetAmount), string(b.Status.NetAmount))
	same("attempt phase", string(a.Status.Attempts[0].Phase), string(b.Status.Attempts[0].Phase))
	same("condition message", a.Status.Conditions[0].Message, b.Status.Conditions[0].Message)
	if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Error("two payments of one merchant and environment do not share their labels map")
	}
	c, d := storedPayment(t, "trx-c"), storedPayment(t, "trx-d")
	c.Labels[paygatev1.LabelInvoice] = "inv-1"
	d.Labels[paygatev1.LabelInvoice] = "inv-2"
	for _, p := range []*paygatev1.Payment{c, d} {
		if _, err := compactPayment(p); err != nil {
			t.Fatal(err)
		}
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() == reflect.ValueOf(c.Labels).UnsafePointer() ||
		c.Labels[paygatev1.LabelInvoice] != "inv-1" || d.Labels[paygatev1.LabelInvoice] != "inv-2" || len(a.Labels) != 2 {
		t.Errorf("payments with other labels share a map: %v, %v, %v", a.Labels, c.Labels, d.Labels)
	}
	if a.Status.Attempts[0].Reference == b.Status.Attempts[0].Reference {
		t.Error("distinct references came out equal")
	}

	// A deleted object whose final state is unknown passes through untouched.
	tomb := toolscache.DeletedFinalStateUnknown{Key: "shop/trx-a", Obj: a}
	if out, err := compactPayment(tomb); err != nil || out.(toolscache.DeletedFinalStateUnknown).Key != "shop/trx-a" {
		t.Fatalf("tombstone: %v, %v", out, err)
	}
}

func TestCompactObjectDropsManagedFields(t *testing.T) {
	m := &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Name: "duka", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	if _, err := compactObject(m); err != nil || m.ManagedFields != nil {
		t.Fatalf("managedFields %v, err %v", m.ManagedFields, err)
	}
}

// However many distinct label sets pass through the bounded table, every object keeps exactly its
// own labels.
func TestSharedLabelsBounded(t *testing.T) {
	for i := range 5000 {
		l := map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelInvoice: fmt.Sprintf("inv-%d", i%3000)}
		got := sharedLabels(l)
		if len(got) != 2 || got[paygatev1.LabelInvoice] != fmt.Sprintf("inv-%d", i%3000) || got[paygatev1.LabelMerchant] != "duka" {
			t.Fatalf("labels %v became %v", l, got)
		}
	}
}
