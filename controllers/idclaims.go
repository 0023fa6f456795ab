// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// Labels on IDClaims, so the allocator can find claims by kind and by owner.
const (
	labelIDKind     = "paygate.dev/id-kind"
	labelIDOwnerUID = "paygate.dev/owner-uid"
)

// maxClaimAttempts bounds how many taken ids one allocation skips before it gives up and retries
// on the next pass.
const maxClaimAttempts = 16

// claimTries is the retry policy of one allocation: up to maxClaimAttempts creates, one after the
// other with no wait (a taken id is not contention to back off from: the next id is free unless
// another writer is claiming at the very same moment).
var claimTries = wait.Backoff{Steps: maxClaimAttempts}

// IDAllocator assigns stable integer ids (merchant ids, deposit method ids). An id belongs to an
// object once an IDClaim named "<kind>-<id>" holding the object's UID exists. Creating that name
// is atomic in the API server, so two writers can never claim one id; claims are kept after their
// owner is deleted, so ids are never reused.
type IDAllocator struct {
	// Client reads from the cache and writes to the API server.
	Client client.Client
	// APIReader reads live; used only when the cache has no claim for an owner, so that a claim
	// created a moment ago is never missed (read-your-writes).
	APIReader client.Reader
}

// Ensure returns the owner's id, claiming the next free one if it has none.
func (a *IDAllocator) Ensure(ctx context.Context, kind paygatev1.IDClaimKind, owner metav1.Object) (int64, error) {
	if id, found, err := a.find(ctx, a.Client, kind, owner); err != nil || found {
		return id, err
	}
	if id, found, err := a.find(ctx, a.APIReader, kind, owner); err != nil || found {
		return id, err
	}
	next, err := a.highest(ctx, kind)
	if err != nil {
		return 0, err
	}
	// Each try claims the id after the last one tried: an AlreadyExists (another writer claimed it
	// since highest listed the claims) moves on to the next.
	err = retry.OnError(claimTries, apierrors.IsAlreadyExists, func() error {
		next++
		claim := &paygatev1.IDClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name:   paygatev1.IDClaimName(kind, next),
				Labels: map[string]string{labelIDKind: string(kind), labelIDOwnerUID: string(owner.GetUID())},
			},
			Spec: paygatev1.IDClaimSpec{
				Kind: kind,
				ID:   next,
				Owner: paygatev1.IDClaimOwner{
					Namespace: owner.GetNamespace(), Name: owner.GetName(), UID: string(owner.GetUID()),
				},
			},
		}
		return a.Client.Create(ctx, claim)
	})
	switch {
	case err == nil:
		return next, nil
	case apierrors.IsAlreadyExists(err):
		return 0, fmt.Errorf("claiming a %s id: %d ids after %d were taken meanwhile", kind, maxClaimAttempts, next-maxClaimAttempts)
	}
	return 0, fmt.Errorf("claiming %s id %d: %w", kind, next, err)
}

func (a *IDAllocator) find(ctx context.Context, r client.Reader, kind paygatev1.IDClaimKind, owner metav1.Object) (int64, bool, error) {
	var claims paygatev1.IDClaimList
	if err := r.List(ctx, &claims, client.MatchingLabels{labelIDKind: string(kind), labelIDOwnerUID: string(owner.GetUID())}); err != nil {
		return 0, false, fmt.Errorf("listing %s id claims: %w", kind, err)
	}
	var lowest int64
	for _, c := range claims.Items {
		// Should two claims ever exist for one owner, the lowest id wins, every time.
		if c.Spec.Owner.UID == string(owner.GetUID()) && (lowest == 0 || c.Spec.ID < lowest) {
			lowest = c.Spec.ID
		}
	}
	return lowest, lowest != 0, nil
}

func (a *IDAllocator) highest(ctx context.Context, kind paygatev1.IDClaimKind) (int64, error) {
	var claims paygatev1.IDClaimList
	if err := a.Client.List(ctx, &claims, client.MatchingLabels{labelIDKind: string(kind)}); err != nil {
		return 0, fmt.Errorf("listing %s id claims: %w", kind, err)
	}
	var high int64
	for _, c := range claims.Items {
		high = max(high, c.Spec.ID)
	}
	return high, nil
}
