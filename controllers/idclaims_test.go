// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

func idTestScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := paygatev1.AddToScheme(s); err != nil {
		t.Fatalf("AddToScheme: %v", err)
	}
	return s
}

// idTestClient is a fake client holding objs.
func idTestClient(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(idTestScheme(t)).WithObjects(objs...).Build()
}

func idTestMerchant(name, uid string) *paygatev1.Merchant {
	return &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Namespace: "shops", Name: name, UID: types.UID(uid)}}
}

func idTestGateway(name, uid string) *paygatev1.Gateway {
	return &paygatev1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)}}
}

// idTestClaim is a claim as the allocator writes it; withKindLabel false leaves out the kind
// label, so the allocator's list of a kind does not see it.
func idTestClaim(kind paygatev1.IDClaimKind, id int64, ownerUID string, withKindLabel bool) *paygatev1.IDClaim {
	labels := map[string]string{labelIDOwnerUID: ownerUID}
	if withKindLabel {
		labels[labelIDKind] = string(kind)
	}
	return &paygatev1.IDClaim{
		ObjectMeta: metav1.ObjectMeta{Name: paygatev1.IDClaimName(kind, id), Labels: labels},
		Spec: paygatev1.IDClaimSpec{
			Kind: kind, ID: id,
			Owner: paygatev1.IDClaimOwner{Namespace: "shops", Name: "owner-" + ownerUID, UID: ownerUID},
		},
	}
}

func claimNames(t *testing.T, c client.Reader) []string {
	t.Helper()
	var list paygatev1.IDClaimList
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatalf("listing claims: %v", err)
	}
	var names []string
	for _, cl := range list.Items {
		names = append(names, cl.Name)
	}
	slices.Sort(names)
	return names
}

// ensureStep is one Ensure call and the id it must return.
type ensureStep struct {
	kind  paygatev1.IDClaimKind
	owner metav1.Object
	want  int64
}

func TestIDAllocatorEnsure(t *testing.T) {
	m1, m2, m3 := idTestMerchant("a", "uid-m1"), idTestMerchant("b", "uid-m2"), idTestMerchant("c", "uid-m3")
	g1, g2 := idTestGateway("mpesa-tz", "uid-g1"), idTestGateway("tigo-tz", "uid-g2")
	// The same name as m1, but a new object: it gets its own id.
	m1Recreated := idTestMerchant("a", "uid-m1-new")

	tests := []struct {
		name       string
		existing   []client.Object
		calls      []ensureStep
		wantClaims []string // every claim afterwards, sorted by name
	}{
		{
			name:       "first owner gets 1, second 2",
			calls:      []ensureStep{{paygatev1.IDClaimMerchant, m1, 1}, {paygatev1.IDClaimMerchant, m2, 2}},
			wantClaims: []string{"merchant-1", "merchant-2"},
		},
		{
			name: "same owner again keeps its id and claims nothing new",
			calls: []ensureStep{
				{paygatev1.IDClaimMerchant, m1, 1}, {paygatev1.IDClaimMerchant, m1, 1},
				{paygatev1.IDClaimMerchant, m2, 2}, {paygatev1.IDClaimMerchant, m1, 1}, {paygatev1.IDClaimMerchant, m2, 2},
			},
			wantClaims: []string{"merchant-1", "merchant-2"},
		},
		{
			name: "gateway and merchant ids are independent",
			calls: []ensureStep{
				{paygatev1.IDClaimMerchant, m1, 1}, {paygatev1.IDClaimMerchant, m2, 2},
				{paygatev1.IDClaimGateway, g1, 1}, {paygatev1.IDClaimMerchant, m3, 3},
				{paygatev1.IDClaimGateway, g2, 2}, {paygatev1.IDClaimGateway, g1, 1},
			},
			wantClaims: []string{"gateway-1", "gateway-2", "merchant-1", "merchant-2", "merchant-3"},
		},
		{
			name: "one object claimed under both kinds gets an id of each",
			calls: []ensureStep{
				{paygatev1.IDClaimMerchant, m1, 1}, {paygatev1.IDClaimMerchant, m2, 2},
				{paygatev1.IDClaimGateway, m2, 1}, {paygatev1.IDClaimMerchant, m2, 2},
			},
			wantClaims: []string{"gateway-1", "merchant-1", "merchant-2"},
		},
		{
			name: "continues after the highest existing claim",
			existing: []client.Object{
				idTestClaim(paygatev1.IDClaimMerchant, 1, "old-1", true),
				idTestClaim(paygatev1.IDClaimMerchant, 7, "old-7", true),
			},
			calls:      []ensureStep{{paygatev1.IDClaimMerchant, m1, 8}},
			wantClaims: []string{"merchant-1", "merchant-7", "merchant-8"},
		},
		{
			name:       "an existing claim of the owner is found",
			existing:   []client.Object{idTestClaim(paygatev1.IDClaimMerchant, 5, "uid-m1", true)},
			calls:      []ensureStep{{paygatev1.IDClaimMerchant, m1, 5}, {paygatev1.IDClaimMerchant, m2, 6}},
			wantClaims: []string{"merchant-5", "merchant-6"},
		},
		{
			name: "two claims for one owner: the lowest wins",
			existing: []client.Object{
				idTestClaim(paygatev1.IDClaimMerchant, 9, "uid-m1", true),
				idTestClaim(paygatev1.IDClaimMerchant, 4, "uid-m1", true),
			},
			calls:      []ensureStep{{paygatev1.IDClaimMerchant, m1, 4}, {paygatev1.IDClaimMerchant, m1, 4}},
			wantClaims: []string{"merchant-4", "merchant-9"},
		},
		{
			name: "taken id the list does not see is skipped via AlreadyExists",
			existing: []client.Object{
				idTestClaim(paygatev1.IDClaimMerchant, 1, "old-1", true),
				idTestClaim(paygatev1.IDClaimMerchant, 2, "old-2", true),
				idTestClaim(paygatev1.IDClaimMerchant, 3, "old-3", false),
			},
			calls:      []ensureStep{{paygatev1.IDClaimMerchant, m1, 4}, {paygatev1.IDClaimMerchant, m1, 4}},
			wantClaims: []string{"merchant-1", "merchant-2", "merchant-3", "merchant-4"},
		},
		{
			name:       "a recreated object of the same name gets a new id",
			calls:      []ensureStep{{paygatev1.IDClaimMerchant, m1, 1}, {paygatev1.IDClaimMerchant, m1Recreated, 2}},
			wantClaims: []string{"merchant-1", "merchant-2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c := idTestClient(t, tt.existing...)
			a := &IDAllocator{Client: c, APIReader: c}
			for i, call := range tt.calls {
				before := claimNames(t, c)
				got, err := a.Ensure(ctx, call.kind, call.owner)
				if err != nil {
					t.Fatalf("call %d: Ensure(%s, %s): %v", i, call.kind, call.owner.GetUID(), err)
				}
				if got != call.want {
					t.Errorf("call %d: Ensure(%s, %s) = %d, want %d", i, call.kind, call.owner.GetUID(), got, call.want)
				}
				after := claimNames(t, c)
				name := paygatev1.IDClaimName(call.kind, got)
				if slices.Contains(before, name) {
					if !slices.Equal(before, after) {
						t.Errorf("call %d: owner already had %s, but claims changed from %v to %v", i, name, before, after)
					}
					continue
				}
				if want := slices.Sorted(slices.Values(append(slices.Clone(before), name))); !slices.Equal(after, want) {
					t.Errorf("call %d: claims = %v, want %v", i, after, want)
				}
				// The new claim is exactly what the allocator promises.
				var claim paygatev1.IDClaim
				if err := c.Get(ctx, client.ObjectKey{Name: name}, &claim); err != nil {
					t.Fatalf("call %d: getting %s: %v", i, name, err)
				}
				wantSpec := paygatev1.IDClaimSpec{Kind: call.kind, ID: got, Owner: paygatev1.IDClaimOwner{
					Namespace: call.owner.GetNamespace(), Name: call.owner.GetName(), UID: string(call.owner.GetUID()),
				}}
				if claim.Spec != wantSpec {
					t.Errorf("call %d: claim spec = %+v, want %+v", i, claim.Spec, wantSpec)
				}
				if claim.Labels[labelIDKind] != string(call.kind) || claim.Labels[labelIDOwnerUID] != string(call.owner.GetUID()) {
					t.Errorf("call %d: claim labels = %v", i, claim.Labels)
				}
			}
			if got := claimNames(t, c); !slices.Equal(got, tt.wantClaims) {
				t.Errorf("claims = %v, want %v", got, tt.wantClaims)
			}
		})
	}
}

// TestIDAllocatorReadsLive: a claim the cache has not seen yet is found through APIReader, so
// the owner keeps its id instead of claiming a second one.
func TestIDAllocatorReadsLive(t *testing.T) {
	ctx := context.Background()
	cache := idTestClient(t)
	live := idTestClient(t, idTestClaim(paygatev1.IDClaimMerchant, 3, "uid-m1", true))
	a := &IDAllocator{Client: cache, APIReader: live}

	got, err := a.Ensure(ctx, paygatev1.IDClaimMerchant, idTestMerchant("a", "uid-m1"))
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if got != 3 {
		t.Errorf("Ensure = %d, want 3 (the live claim)", got)
	}
	if names := claimNames(t, cache); len(names) != 0 {
		t.Errorf("Ensure created claims %v although the owner had one", names)
	}
}

// TestIDAllocatorCacheFirst: an owner whose claim is in the cache is answered from the cache;
// the live reader (an API call) is not needed.
func TestIDAllocatorCacheFirst(t *testing.T) {
	cache := idTestClient(t, idTestClaim(paygatev1.IDClaimMerchant, 2, "uid-m1", true))
	live := fake.NewClientBuilder().WithScheme(idTestScheme(t)).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			t.Errorf("APIReader listed although the cache had the claim")
			return errors.New("live read")
		},
	}).Build()
	a := &IDAllocator{Client: cache, APIReader: live}

	got, err := a.Ensure(context.Background(), paygatev1.IDClaimMerchant, idTestMerchant("a", "uid-m1"))
	if err != nil || got != 2 {
		t.Errorf("Ensure = %d, %v; want 2, nil", got, err)
	}
}

// TestIDAllocatorGivesUp: after maxClaimAttempts taken ids the allocator reports an error
// instead of looping.
func TestIDAllocatorGivesUp(t *testing.T) {
	ctx := context.Background()
	var taken []client.Object
	for id := int64(1); id <= maxClaimAttempts; id++ {
		taken = append(taken, idTestClaim(paygatev1.IDClaimMerchant, id, fmt.Sprintf("old-%d", id), false))
	}
	c := idTestClient(t, taken...)
	a := &IDAllocator{Client: c, APIReader: c}

	got, err := a.Ensure(ctx, paygatev1.IDClaimMerchant, idTestMerchant("a", "uid-m1"))
	if err == nil {
		t.Fatalf("Ensure = %d, want an error after %d taken ids", got, maxClaimAttempts)
	}
	if got != 0 {
		t.Errorf("Ensure returned id %d with its error", got)
	}
	if !strings.Contains(err.Error(), "taken") {
		t.Errorf("error = %q, want it to say the ids were taken", err)
	}
	if n := len(claimNames(t, c)); n != maxClaimAttempts {
		t.Errorf("%d claims exist, want %d (none created)", n, maxClaimAttempts)
	}

	// Once the list sees the taken ids (next pass), the owner gets the next free one.
	for id := int64(1); id <= maxClaimAttempts; id++ {
		var claim paygatev1.IDClaim
		if err := c.Get(ctx, client.ObjectKey{Name: paygatev1.IDClaimName(paygatev1.IDClaimMerchant, id)}, &claim); err != nil {
			t.Fatal(err)
		}
		claim.Labels[labelIDKind] = string(paygatev1.IDClaimMerchant)
		if err := c.Update(ctx, &claim); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := a.Ensure(ctx, paygatev1.IDClaimMerchant, idTestMerchant("a", "uid-m1")); err != nil || got != maxClaimAttempts+1 {
		t.Errorf("Ensure after the list caught up = %d, %v; want %d, nil", got, err, maxClaimAttempts+1)
	}
}

// TestIDAllocatorErrors: errors other than AlreadyExists are returned, wrapped, and no id is
// given out.
func TestIDAllocatorErrors(t *testing.T) {
	errList := errors.New("list failed")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: paygatev1.GroupVersion.Group, Resource: "idclaims"}, "merchant-1", errors.New("no"))

	tests := []struct {
		name  string
		funcs interceptor.Funcs
		want  error
	}{
		{
			name: "list fails",
			funcs: interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
				return errList
			}},
			want: errList,
		},
		{
			name: "create forbidden",
			funcs: interceptor.Funcs{Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				return forbidden
			}},
			want: forbidden,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(idTestScheme(t)).WithInterceptorFuncs(tt.funcs).Build()
			a := &IDAllocator{Client: c, APIReader: c}
			got, err := a.Ensure(context.Background(), paygatev1.IDClaimMerchant, idTestMerchant("a", "uid-m1"))
			if !errors.Is(err, tt.want) {
				t.Errorf("Ensure error = %v, want it to wrap %v", err, tt.want)
			}
			if got != 0 {
				t.Errorf("Ensure = %d with an error, want 0", got)
			}
		})
	}
}
