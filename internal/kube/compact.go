// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package kube

import (
	"sync"
	"unique"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// The informer caches of the manager and the apiserver hold every live Payment of every merchant,
// so what one cached payment costs is what a hundred thousand cost (docs/performance.md). Before an
// object enters a cache it is compacted:
//
//   - its managedFields go: server-side apply's bookkeeping, about 0.7 KB a payment, that no
//     Paygate code reads (the archiver drops them too);
//   - payments whose labels are only the merchant and the environment (all but a subscription's
//     charges) share one labels map per merchant and environment. The cache never hands its own
//     objects out to be changed (reads deep-copy them; a list that asks for the cache's objects
//     only reads them), so a shared map is never written;
//   - the strings that repeat from one payment to the next (namespace, label keys and values,
//     merchant, environment, currency, gateway codes, phases, condition types, reasons and
//     messages, fee schedules) are interned: a decoded object otherwise holds its own copy of
//     each, and a hundred thousand payments of one merchant hold "Ready", "TZS" and the merchant's
//     name a hundred thousand times. Values stay exactly as stored; only their memory is shared.
//
// Interned strings are kept by the unique package and collected once no cached object uses them.

// compactObject is the cache transform of every kind: it drops managed fields.
func compactObject(in any) (any, error) {
	if obj, err := meta.Accessor(in); err == nil && obj.GetManagedFields() != nil {
		obj.SetManagedFields(nil)
	}
	return in, nil
}

// compactPayment is the cache transform of Payments.
func compactPayment(in any) (any, error) {
	p, ok := in.(*paygatev1.Payment)
	if !ok {
		return compactObject(in) // a tombstone: nothing to share
	}
	p.ManagedFields = nil
	p.APIVersion, p.Kind = intern(p.APIVersion), intern(p.Kind)
	compactMeta(&p.ObjectMeta)
	s := &p.Spec
	s.MerchantRef.Name = intern(s.MerchantRef.Name)
	s.Environment = internAs(s.Environment)
	s.Amount = internAs(s.Amount)
	s.Currency = internAs(s.Currency)
	s.Mode = internAs(s.Mode)
	s.WebhookURL = intern(s.WebhookURL)
	s.SuccessRedirect = intern(s.SuccessRedirect)
	s.CancelRedirect = intern(s.CancelRedirect)
	for i := range s.AllowPaymentMethods {
		s.AllowPaymentMethods[i] = intern(s.AllowPaymentMethods[i])
	}
	for i := range s.Gateways {
		s.Gateways[i] = internAs(s.Gateways[i])
	}
	if s.PushRequest != nil {
		s.PushRequest.Gateway = internAs(s.PushRequest.Gateway)
	}
	st := &p.Status
	st.Phase = internAs(st.Phase)
	st.Reason = intern(st.Reason)
	st.Gateway = internAs(st.Gateway)
	st.Fee = internAs(st.Fee)
	st.NetAmount = internAs(st.NetAmount)
	st.Remark = intern(st.Remark)
	for i := range st.Attempts {
		a := &st.Attempts[i]
		a.Gateway = internAs(a.Gateway)
		a.Phase = internAs(a.Phase)
		a.Code = intern(a.Code)
		a.Fees.Percent = intern(a.Fees.Percent)
		a.Fees.Fixed = internAs(a.Fees.Fixed)
	}
	compactConditions(st.Conditions)
	return p, nil
}

// compactMeta interns an object's namespace and its labels and annotations: the keys always
// repeat, and so do most values (merchant, environment, invoice and subscription names).
func compactMeta(m *metav1.ObjectMeta) {
	m.Namespace = intern(m.Namespace)
	m.Labels = sharedLabels(m.Labels)
	m.Annotations = internMap(m.Annotations)
}

// labelSets holds the shared labels maps, by merchant and environment: a few per merchant.
var labelSets sync.Map // labelSetKey -> map[string]string

type labelSetKey struct{ merchant, env unique.Handle[string] }

// sharedLabels returns the one map of labels equal to l when l holds only the merchant and the
// environment, else l with its strings interned.
func sharedLabels(l map[string]string) map[string]string {
	merchant, env := l[paygatev1.LabelMerchant], l[paygatev1.LabelEnvironment]
	if len(l) != 2 || merchant == "" || env == "" {
		return internMap(l)
	}
	key := labelSetKey{unique.Make(merchant), unique.Make(env)}
	if m, ok := labelSets.Load(key); ok {
		return m.(map[string]string)
	}
	m, _ := labelSets.LoadOrStore(key, internMap(l))
	return m.(map[string]string)
}

func compactConditions(cs []metav1.Condition) {
	for i := range cs {
		c := &cs[i]
		c.Type = intern(c.Type)
		c.Status = internAs(c.Status)
		c.Reason = intern(c.Reason)
		c.Message = intern(c.Message)
	}
}

func internMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[intern(k)] = intern(v)
	}
	return out
}

func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

func internAs[S ~string](s S) S { return S(intern(string(s))) }
