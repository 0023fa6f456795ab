// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	webhookevents "github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/internal/metrics"
)

// announce stores the subscription's status, then sends the events of what is stored: the
// subscription's creation, suspension and cancellation, and the latest invoice's creation,
// payment and failed charge. Event names derive from their occurrence, so each is sent once.
func (r *SubscriptionReconciler) announce(ctx context.Context, s *subscriptionScope) (ctrl.Result, error) {
	sub := s.sub
	if err := r.saveSubscription(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if s.merchant == nil {
		return ctrl.Result{}, nil // events wait for the merchant, whose URL they may go to
	}
	errs := []error{r.subscriptionEvent(ctx, s, webhookevents.SubscriptionCreated, "")}
	switch sub.Phase() {
	case paygatev1.SubscriptionSuspended:
		errs = append(errs, r.subscriptionEvent(ctx, s, webhookevents.SubscriptionSuspended, strconv.FormatInt(int64(sub.Status.ResumedSequence), 10)))
	case paygatev1.SubscriptionCancelled:
		errs = append(errs, r.subscriptionEvent(ctx, s, webhookevents.SubscriptionCancelled, ""))
	}
	if inv := s.invoice; inv != nil {
		errs = append(errs, r.invoiceEvent(ctx, s, webhookevents.InvoiceCreated, nil))
		if inv.Status.Phase == paygatev1.InvoicePaid {
			paying, err := r.payingCharge(ctx, s)
			if err == nil {
				err = r.invoiceEvent(ctx, s, webhookevents.InvoicePaid, paying)
			}
			errs = append(errs, err)
		}
		// A failed charge's event once the invoice records the failure (settleCharges did, unless
		// the plan is missing: then it waits).
		if p := s.latest; p != nil && p.Status.Phase == paygatev1.PaymentFailed && s.blocked == "" &&
			(inv.Status.Phase == paygatev1.InvoicePaymentFailed || inv.Status.Phase == paygatev1.InvoiceVoid) {
			errs = append(errs, r.invoiceEvent(ctx, s, webhookevents.InvoicePaymentFailed, p))
		}
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// payingCharge is the charge that paid the invoice.
func (r *SubscriptionReconciler) payingCharge(ctx context.Context, s *subscriptionScope) (*paygatev1.Payment, error) {
	inv := s.invoice
	for _, p := range s.charges {
		if p != nil && p.Name == inv.Status.PaidPayment {
			return p, nil
		}
	}
	p := &paygatev1.Payment{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: inv.Namespace, Name: inv.Status.PaidPayment}, p); err != nil {
		return nil, fmt.Errorf("reading charge %s that paid invoice %s: %w", inv.Status.PaidPayment, inv.Name, err)
	}
	return p, nil
}

func (r *SubscriptionReconciler) subscriptionEvent(ctx context.Context, s *subscriptionScope, eventType, occurrence string) error {
	sub := s.sub
	return r.emit(ctx, s, "Subscription", sub, eventType, occurrence, nil, func() (any, error) {
		reason := ""
		if s.invoice != nil {
			reason = s.invoice.Status.LastFailureReason
		}
		return webhookevents.NewSubscriptionData(webhookevents.SubscriptionEvent{Type: eventType, Subscription: sub, Location: s.location(), Reason: reason})
	})
}

func (r *SubscriptionReconciler) invoiceEvent(ctx context.Context, s *subscriptionScope, eventType string, charge *paygatev1.Payment) error {
	inv, occurrence := s.invoice, ""
	if eventType == webhookevents.InvoicePaymentFailed {
		occurrence = string(charge.UID) // one per failed charge
	}
	var born func()
	if charge != nil {
		// Charges send no payment.* event; they are counted where their invoice event is born,
		// once per charge, as payments are where theirs is.
		env, phase, reason := string(charge.Spec.Environment), string(charge.Status.Phase), charge.Status.Reason
		born = func() { metrics.PaymentsSettled.WithLabelValues(env, phase, reason).Inc() }
	}
	return r.emit(ctx, s, "Invoice", inv, eventType, occurrence, born, func() (any, error) {
		return webhookevents.NewInvoiceData(webhookevents.InvoiceEvent{Type: eventType, Invoice: inv, Charge: charge, Location: s.location()})
	})
}

// emit creates the WebhookDelivery of an occurrence unless it exists (emitOnce), to the
// subscription's webhookURL, else the merchant's default URL of the environment. born, when set,
// runs once the delivery is created.
//
// Billing events are created here, before their first attempt, and not handed over to the webhook
// delivery controller's first attempts as payment, payout and refund events are: the next invoice
// is opened, and the next charge sent, only once the events of the previous ones exist (the step
// after announce), and announce only ever looks at the latest invoice, so an event handed over and
// lost in a crash after the subscription moved on would never be born.
func (r *SubscriptionReconciler) emit(ctx context.Context, s *subscriptionScope, kind string, obj client.Object, eventType, occurrence string, born func(), build func() (any, error)) error {
	uid := string(obj.GetUID())
	name := webhookevents.DeliveryName(uid, eventType)
	if occurrence != "" {
		name = webhookevents.OccurrenceDeliveryName(uid, eventType, occurrence)
	}
	sub := s.sub
	return emitOnce(ctx, r.Client, r.APIReader, nil, r.Clock.Now(), webhookEvent{
		source: webhookevents.Source{Kind: kind, Object: obj, Merchant: sub.Spec.MerchantRef.Name,
			Env: sub.Spec.Environment, Occurrence: occurrence},
		eventType: eventType,
		names:     []string{name},
		target: func() (string, error) {
			if sub.Spec.WebhookURL != "" || s.merchant == nil {
				return sub.Spec.WebhookURL, nil
			}
			return s.merchant.Spec.WebhookURLs.For(sub.Spec.Environment), nil
		},
		data: build,
		born: born,
	})
}
