// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The defaults the BillingPlan CRD applies at admission are the ones Go code applies to a zero
// value (internal/billing) and docs/billing.md names.
func TestBillingPlanCRDDefaults(t *testing.T) {
	raw, err := os.ReadFile("../../config/crd/bases/paygate.dev_billingplans.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	def := func(path ...string) any {
		s := spec
		for _, p := range path {
			s = s.Properties[p]
		}
		if s.Default == nil {
			t.Fatalf("spec.%v has no default", path)
		}
		var v any
		if err := json.Unmarshal(s.Default.Raw, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	var days []any
	for _, d := range DefaultRetryAfterDays {
		days = append(days, float64(d))
	}
	for _, tc := range []struct {
		path []string
		want any
	}{
		{[]string{"dunning", "retryAfterDays"}, days},
		{[]string{"dunning", "maxFailures"}, float64(DefaultMaxFailures)},
		{[]string{"chargingWindow", "start"}, DefaultWindowStart},
		{[]string{"chargingWindow", "end"}, DefaultWindowEnd},
		{[]string{"chargingWindow", "timeZone"}, DefaultTimeZone},
		{[]string{"intervalCount"}, float64(1)},
	} {
		if got := def(tc.path...); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("spec.%v defaults to %v in the CRD, %v in Go", tc.path, got, tc.want)
		}
	}
}

func TestSubscriptionHelpers(t *testing.T) {
	s := &Subscription{}
	if s.Phase() != SubscriptionPending || s.ClockOffsetSeconds() != 0 {
		t.Errorf("untouched subscription: phase %q, offset %d", s.Phase(), s.ClockOffsetSeconds())
	}
	s.Status.Phase, s.Spec.TestClock = SubscriptionPastDue, &TestClock{OffsetSeconds: 86400}
	if s.Phase() != SubscriptionPastDue || s.ClockOffsetSeconds() != 86400 {
		t.Errorf("phase %q, offset %d", s.Phase(), s.ClockOffsetSeconds())
	}
	if got := SubscriptionAPIID("not-a-subscription"); got != "not-a-subscription" {
		t.Errorf("SubscriptionAPIID of a foreign name = %q", got)
	}
}

func TestInvoiceHelpers(t *testing.T) {
	for phase, terminal := range map[InvoicePhase]bool{"": false, InvoiceOpen: false, InvoicePaymentFailed: false, InvoicePaid: true, InvoiceVoid: true} {
		i := &Invoice{Status: InvoiceStatus{Phase: phase}}
		if i.Terminal() != terminal {
			t.Errorf("%q: terminal %v", phase, i.Terminal())
		}
		if want := phase; (want == "" && i.Phase() != InvoiceOpen) || (want != "" && i.Phase() != want) {
			t.Errorf("%q: Phase() = %q", phase, i.Phase())
		}
	}
}
