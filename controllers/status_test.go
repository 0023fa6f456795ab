// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
)

// countingStatusWrites builds a fake client holding objs that counts status writes and records
// the resourceVersion the last one carried (its optimistic lock).
func countingStatusWrites(t *testing.T, objs ...client.Object) (client.Client, *int, *string) {
	t.Helper()
	var (
		n    int
		last string
	)
	c := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(objs...).WithStatusSubresource(objs...).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				n++
				last = obj.GetResourceVersion()
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	return c, &n, &last
}

func TestStatusPatch(t *testing.T) {
	ctx := context.Background()
	stored := &paygatev1.Balance{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "duka-sandbox"}}
	c, writes, last := countingStatusWrites(t, stored)
	b := &paygatev1.Balance{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), b); err != nil {
		t.Fatal(err)
	}
	status := func(b *paygatev1.Balance) any { return &b.Status }
	patch := newStatusPatch(c, b, status)

	if err := patch.Patch(ctx, b); err != nil || *writes != 0 {
		t.Fatalf("unchanged status: %d writes, err %v; want none", *writes, err)
	}

	b.Status.ObservedPayments = 3
	if err := patch.Patch(ctx, b); err != nil || *writes != 1 {
		t.Fatalf("changed status: %d writes, err %v; want 1", *writes, err)
	}
	if *last == "" {
		t.Errorf("the status write carries no resourceVersion: it is not optimistically locked")
	}
	if err := patch.Patch(ctx, b); err != nil || *writes != 1 {
		t.Fatalf("after a write the written status is the base: %d writes, err %v; want still 1", *writes, err)
	}

	// Another writer changes the object: the next patch from the old read conflicts instead of
	// overwriting it.
	other := &paygatev1.Balance{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), other); err != nil {
		t.Fatal(err)
	}
	other.Status.ObservedPayments = 4
	if err := c.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	b.Status.ObservedPayments = 5
	if err := patch.Patch(ctx, b); !apierrors.IsConflict(err) {
		t.Fatalf("patch over a newer write: err %v, want a conflict", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), other); err != nil || other.Status.ObservedPayments != 4 {
		t.Fatalf("stored observedPayments %d (err %v), want the other writer's 4", other.Status.ObservedPayments, err)
	}
}

func TestFailureReason(t *testing.T) {
	payments := schema.GroupResource{Group: "paygate.dev", Resource: "payments"}
	apiErr := apierrors.NewInternalError(errors.New("etcdserver: leader changed"))
	netErr := &url.Error{Op: "Get", URL: "https://10.96.0.1:443/apis", Err: errors.New("connection refused")}
	provErr := asProviderError(errors.New("POST https://pay.example/push: 502 Bad Gateway at 10:00:01.234"))
	tests := []struct {
		name       string
		err        error
		wantReason string
	}{
		{"a provider error", fmt.Errorf("asking the provider: %w", provErr), ReasonProviderUnreachable},
		{"a provider's HTTP error is still the provider's", asProviderError(netErr), ReasonProviderUnreachable},
		{"a Kubernetes API status", fmt.Errorf("reading gateway: %w", apiErr), ReasonKubernetesAPIError},
		{"a conflict", apierrors.NewConflict(payments, "trx-a", errors.New("modified")), ReasonKubernetesAPIError},
		{"the Kubernetes API unreachable", fmt.Errorf("listing gateways: %w", netErr), ReasonKubernetesAPIError},
		{"a provider error joined with an API error", errors.Join(apiErr, provErr), ReasonProviderUnreachable},
		{"someone else's Secret", errors.Join(apiErr, fmt.Errorf("issuing: %w", &secretNotOwnedError{name: "duka-sandbox-credentials"})), ReasonSecretNotOwned},
		{"anything else", errors.New("unknown currency XYZ"), ReasonRetryingAfterError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, msg := failureReason(tt.err)
			if reason != tt.wantReason {
				t.Errorf("reason %q, want %q", reason, tt.wantReason)
			}
			if msg == "" || strings.Contains(msg, tt.err.Error()) || strings.ContainsAny(msg, "0123456789:") {
				t.Errorf("message %q: want a short sentence without the error's text", msg)
			}
			if strings.ContainsAny(reason, " :") || reason[0] < 'A' || reason[0] > 'Z' {
				t.Errorf("reason %q is not CamelCase", reason)
			}
		})
	}
}

// A transition is announced by the pass whose write stuck, and by no other: OnWrite runs after a
// successful write, never after a conflict or when the status was already stored.
func TestStatusPatchOnWrite(t *testing.T) {
	ctx := context.Background()
	stored := &paygatev1.Balance{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "duka-sandbox"}}
	c, _, _ := countingStatusWrites(t, stored)
	read := func() *paygatev1.Balance {
		b := &paygatev1.Balance{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(stored), b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	status := func(b *paygatev1.Balance) any { return &b.Status }
	var announced []string

	// Two passes read the same state and compute the same transition.
	first, second := read(), read()
	firstPatch, secondPatch := newStatusPatch(c, first, status), newStatusPatch(c, second, status)
	for _, pass := range []struct {
		name  string
		b     *paygatev1.Balance
		patch *statusPatch[*paygatev1.Balance]
	}{{"first", first, firstPatch}, {"second", second, secondPatch}} {
		pass.b.Status.ObservedPayments = 7
		pass.patch.OnWrite(func() { announced = append(announced, pass.name) })
	}
	if err := firstPatch.Patch(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := secondPatch.Patch(ctx, second); !apierrors.IsConflict(err) {
		t.Fatalf("second pass: err %v, want a conflict", err)
	}
	if fmt.Sprint(announced) != "[first]" {
		t.Fatalf("announced by %v, want only the pass whose write stuck", announced)
	}

	// A retry of the losing pass reads the stored transition: nothing to write, nothing to announce.
	retry := read()
	retryPatch := newStatusPatch(c, retry, status)
	retry.Status.ObservedPayments = 7
	retryPatch.OnWrite(func() { announced = append(announced, "retry") })
	if err := retryPatch.Patch(ctx, retry); err != nil {
		t.Fatal(err)
	}
	// A later write announces only what was queued for it.
	retry.Status.ObservedPayments = 8
	if err := retryPatch.Patch(ctx, retry); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(announced) != "[first]" {
		t.Fatalf("announced by %v, want only [first]", announced)
	}
}
