// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"net/url"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// statusPatch is how every reconciler writes status (in the manner of Cluster API's patch
// helper). It remembers the status the API server holds, and Patch writes the status subresource
// only when the pass changed it, with an optimistic lock: a pass that read a stale cache or lost a
// race with another writer gets a conflict (a quick, quiet retry: quietConflicts) instead of
// overwriting a newer write. The write is an update of the status subresource carrying the
// object's resourceVersion, not a merge patch: the API server stores the request's status and
// keeps everything else as it holds it, exactly what a locked merge patch of the status stores,
// and it does not have to encode the stored object, merge the patch into it and decode the result
// again (a quarter of kube-apiserver's CPU for each status write; docs/performance.md).
type statusPatch[T client.Object] struct {
	c      client.StatusClient
	base   T
	status func(T) any
	// onWrite is what the next successful write announces (OnWrite).
	onWrite []func()
}

// newStatusPatch snapshots obj as the API server holds it; status returns obj's status field.
func newStatusPatch[T client.Object](c client.StatusClient, obj T, status func(T) any) *statusPatch[T] {
	return &statusPatch[T]{c: c, base: obj.DeepCopyObject().(T), status: status}
}

// Changed reports whether obj's status differs from what the API server holds.
func (p *statusPatch[T]) Changed(obj T) bool {
	return !equality.Semantic.DeepEqual(p.status(p.base), p.status(obj))
}

// Patch writes obj's status when it changed. After a successful write obj holds what the API
// server stored (its new resourceVersion included) and is the base of the next Patch, so a pass
// may patch more than once: the payment controller records an attempt (written ahead) before it
// calls the provider, and patches the outcome at the end of the pass. The error is the client's,
// unwrapped: callers say what they were writing.
func (p *statusPatch[T]) Patch(ctx context.Context, obj T) error {
	announce := p.onWrite
	p.onWrite = nil
	if !p.Changed(obj) {
		return nil
	}
	if err := p.c.Status().Update(ctx, obj); err != nil {
		return err
	}
	p.base = obj.DeepCopyObject().(T)
	for _, f := range announce {
		f()
	}
	return nil
}

// Stored is the object as the API server holds it as far as the patch knows: as read, or as the
// last successful Patch stored it. A pass compares its object with it to tell a transition it makes
// from one an earlier pass stored. Callers must not modify it.
func (p *statusPatch[T]) Stored() T { return p.base }

// OnWrite defers f (recording a Kubernetes Event about a transition) until the next Patch stores
// the status that holds the transition. A pass that read a stale cache computes the same
// transition again, then loses the optimistic lock: its f never runs, so a transition is
// announced once, by the pass whose write stuck. A Patch with nothing to write drops f: the
// transition was stored, and announced, by an earlier pass.
func (p *statusPatch[T]) OnWrite(f func()) { p.onWrite = append(p.onWrite, f) }

// Condition reasons shared by the reconcilers. Reasons are stable CamelCase words and messages
// short sentences: neither ever carries an error's text, which differs from one retry to the next
// and would rewrite status on every pass. The error itself is in the manager's log.
const (
	// ReasonProviderUnreachable: the mobile-money provider could not be asked (push or status
	// query failed, or no provider is configured for the gateway).
	ReasonProviderUnreachable = "ProviderUnreachable"
	// ReasonKubernetesAPIError: a read or write to the Kubernetes API failed.
	ReasonKubernetesAPIError = "KubernetesAPIError"
	// ReasonRetryingAfterError: the pass failed for another reason.
	ReasonRetryingAfterError = "RetryingAfterError"
	// ReasonSecretNotOwned: a Secret Paygate would issue exists and belongs to someone else.
	ReasonSecretNotOwned = "SecretNotOwned"
)

// providerError marks an error from the payment provider (as opposed to the Kubernetes API), so
// that conditions can tell the two apart.
type providerError struct{ err error }

func (e *providerError) Error() string { return e.err.Error() }
func (e *providerError) Unwrap() error { return e.err }

// asProviderError wraps a provider's error; nil stays nil.
func asProviderError(err error) error {
	if err == nil {
		return nil
	}
	return &providerError{err: err}
}

// secretNotOwnedError: the Secret a merchant's credentials go into exists and is not controlled
// by the Merchant; Paygate never overwrites it.
type secretNotOwnedError struct{ name string }

func (e *secretNotOwnedError) Error() string {
	return "secret " + e.name + " exists and is not controlled by this Merchant (" + ReasonSecretNotOwned + "); delete or rename it"
}

// failureReason is the reason and message a condition reports for a failed pass or step: what
// kind of failure, in words that stay the same from one retry to the next.
// ReasonInvalidAnnotation: an annotation that asks for something does not read; nothing it asks
// for is done until it is fixed.
const ReasonInvalidAnnotation = "InvalidAnnotation"

// invalidAnnotationError is an annotation whose value does not read (a person's typo: the
// message says what is expected, and the pass is not retried until the object changes).
type invalidAnnotationError struct {
	annotation string
	err        error
}

func (e *invalidAnnotationError) Error() string {
	return "Annotation " + e.annotation + ": " + e.err.Error() + "; nothing changes until it is fixed"
}

func (e *invalidAnnotationError) Unwrap() error { return e.err }

func failureReason(err error) (reason, message string) {
	var (
		notOwned      *secretNotOwnedError
		badAnnotation *invalidAnnotationError
		prov          *providerError
		status        apierrors.APIStatus
		urlErr        *url.Error
	)
	switch {
	case errors.As(err, &notOwned):
		return ReasonSecretNotOwned, "Secret " + notOwned.name + " exists and is not controlled by this Merchant; delete or rename it"
	case errors.As(err, &badAnnotation):
		return ReasonInvalidAnnotation, badAnnotation.Error()
	case errors.As(err, &prov):
		return ReasonProviderUnreachable, "The payment provider could not be reached; retrying"
	case errors.As(err, &status), errors.As(err, &urlErr):
		// Outside provider calls (wrapped above), the only HTTP the reconcilers speak is to the
		// Kubernetes API.
		return ReasonKubernetesAPIError, "A Kubernetes API request failed; retrying"
	}
	return ReasonRetryingAfterError, "The last reconcile failed; retrying (the manager's log has the error)"
}

// setReady sets the Ready condition of a status.
func setReady(conditions *[]metav1.Condition, generation int64, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(conditions, metav1.Condition{
		Type: paygatev1.ConditionReady, Status: status, Reason: reason, Message: message, ObservedGeneration: generation,
	})
}
