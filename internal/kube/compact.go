// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package kube

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync/atomic"
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
//   - payments with equal labels share one labels map (most carry only their merchant and
//     environment). The cache never hands its own objects out to be changed (reads deep-copy
//     them; a list that asks for the cache's objects only reads them), so a shared map is never
//     written;
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
	// Redirect URLs often carry the merchant's order: interning what never repeats costs memory.
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

// compactMeta interns an object's namespace, its labels (keys and values repeat: merchant,
// environment, invoice and subscription names) and its annotations' keys (their values, an
// idempotency key or a callback's reference, rarely repeat).
func compactMeta(m *metav1.ObjectMeta) {
	m.Namespace = intern(m.Namespace)
	m.Labels = sharedLabels(m.Labels)
	if len(m.Annotations) > 0 {
		out := make(map[string]string, len(m.Annotations))
		for k, v := range m.Annotations {
			out[intern(k)] = v
		}
		m.Annotations = out
	}
}

// labelTable is a direct-mapped table of shared labels maps: a label set goes to the slot of its
// hash, replacing what was there. Common sets (a merchant's, an environment's) stay and are
// shared; sets seen once (a subscription charge's invoice) pass through. Its size bounds the
// memory it holds whatever the cluster's labels.
var labelTable [1024]atomic.Pointer[labelSet]

var labelSeed = maphash.MakeSeed()

type labelSet struct {
	key    string
	labels map[string]string
}

// sharedLabels returns a map equal to l, shared with the other objects whose labels equal l
// while its slot holds it, with its strings interned.
func sharedLabels(l map[string]string) map[string]string {
	if len(l) == 0 {
		return l
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(l[k])
		b.WriteByte(0)
	}
	key := b.String()
	slot := &labelTable[maphash.String(labelSeed, key)%uint64(len(labelTable))]
	if e := slot.Load(); e != nil && e.key == key {
		return e.labels
	}
	m := internMap(l)
	slot.Store(&labelSet{key: key, labels: m})
	return m
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
