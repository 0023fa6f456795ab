// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/metrics"
)

// Reasons of the ProviderForgotAttempt condition and its event.
const (
	// ReasonProviderForgotAttempt: the provider accepted the attempt and now knows nothing of it.
	ReasonProviderForgotAttempt = "ProviderForgotAttempt"
	// ReasonProviderKnowsAttempt: the provider answers about the attempt again (or it ended).
	ReasonProviderKnowsAttempt = "ProviderKnowsAttempt"
)

// attemptRecall records whether the provider still knows an attempt it had accepted. A provider
// that forgets one (it answers "not found" to a status query about an operation it acknowledged)
// is a provider defect Paygate cannot repair by itself: pushing or disbursing again could move
// money twice, and failing the object could lose money that moved. So the object raises the
// ProviderForgotAttempt condition, a Warning event (once, when it turns on) and the metric
// paygate_provider_forgotten_attempts_total, and goes on with what it can still do (a payment
// expires as usual; a payout asks an operator to resolve it), instead of failing every pass.
type attemptRecall struct {
	recorder  events.EventRecorder
	operation string // push or disbursement
	// announce defers the event and the metric until the status write that raises the condition
	// sticks (statusPatch.OnWrite).
	announce func(func())
}

// forgot raises the condition on obj (whose conditions and generation are given).
func (r attemptRecall) forgot(obj runtime.Object, env paygatev1.Environment, conditions *[]metav1.Condition, generation int64, reference string) {
	if meta.IsStatusConditionTrue(*conditions, paygatev1.ConditionProviderForgotAttempt) {
		return
	}
	msg := "The provider accepted " + r.operation + " " + reference + " and now knows nothing of it; check with the provider"
	meta.SetStatusCondition(conditions, metav1.Condition{Type: paygatev1.ConditionProviderForgotAttempt, Status: metav1.ConditionTrue,
		Reason: ReasonProviderForgotAttempt, Message: msg, ObservedGeneration: generation})
	r.announce(func() {
		r.recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonProviderForgotAttempt, "AskProvider", "%s", msg)
		metrics.ForgottenAttempts.WithLabelValues(r.operation, string(env)).Inc()
	})
}

// knows clears the condition once the provider answers about the attempt again.
func (r attemptRecall) knows(conditions *[]metav1.Condition, generation int64) {
	if !meta.IsStatusConditionTrue(*conditions, paygatev1.ConditionProviderForgotAttempt) {
		return
	}
	meta.SetStatusCondition(conditions, metav1.Condition{Type: paygatev1.ConditionProviderForgotAttempt, Status: metav1.ConditionFalse,
		Reason: ReasonProviderKnowsAttempt, Message: "The provider answers about the " + r.operation + " again", ObservedGeneration: generation})
}
