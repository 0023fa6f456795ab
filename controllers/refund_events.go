// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	webhookevents "github.com/paygate/paygate/internal/events"
)

// refundWebhook announces the ended refund's webhook event (refund.completed or refund.failed,
// docs/webhooks-receiver.md), once (emitOnce): its name derives from the refund's UID and the
// event type. born runs once the event is created.
func (r *RefundReconciler) refundWebhook(ctx context.Context, rf *paygatev1.Refund, born func()) error {
	return emitOnce(ctx, r.Client, r.APIReader, r.FirstAttempts, r.Clock.Now(), outgoingEvent(ctx, r.Client, "Refund", rf, webhookevents.RefundEventType(rf),
		func() (any, error) { return webhookevents.NewRefundData(rf) }, born))
}
