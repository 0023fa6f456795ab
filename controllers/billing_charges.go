// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/billing"
	"github.com/paygate/paygate/internal/eligibility"
	"github.com/paygate/paygate/internal/failpoint"
	"github.com/paygate/paygate/internal/money"
)

// charge sends the invoice's next charge when it is due: the first charge of the subscription at
// once, any other at its time (the period's start for a renewal, the dunning schedule's for a
// retry) and only inside the charging window. The attempt is recorded in the invoice's status,
// under the optimistic lock, before its Payment is created (written ahead); an attempt recorded
// and not created (a manager stopped between the two) is created now, under its recorded name.
func (r *SubscriptionReconciler) charge(ctx context.Context, s *subscriptionScope) (ctrl.Result, error) {
	sub, inv := s.sub, s.invoice
	if s.blocked != "" || inv == nil || inv.Terminal() {
		return ctrl.Result{}, nil
	}
	if s.latestMissing {
		if !s.firstCharge() && !s.schedule.Window.Contains(s.subNow) {
			// Written ahead and never sent, and the window closed meanwhile (the manager was down
			// between the record and the Payment): a prompt now would reach a customer who may be
			// asleep. The record is taken back and the charge waits for the window's next opening.
			return r.unrecordCharge(ctx, s)
		}
		return r.sendCharge(ctx, s, inv.Status.Payments[len(inv.Status.Payments)-1])
	}
	if phase := sub.Phase(); phase == paygatev1.SubscriptionSuspended || phase == paygatev1.SubscriptionCancelled ||
		sub.Spec.Cancel == paygatev1.CancelImmediately {
		return ctrl.Result{}, nil
	}
	if s.latest != nil && s.latest.Status.Phase != paygatev1.PaymentFailed {
		return ctrl.Result{}, nil // one prompt at a time: the charge's progress wakes the subscription
	}
	if !(inv.Status.AttemptCount == 0 && s.firstInvoice) {
		due := inv.Status.NextAttemptAt
		if due == nil {
			if inv.Status.AttemptCount > 0 {
				return ctrl.Result{}, nil // no retry scheduled
			}
			due = secondTime(s.schedule.RenewalChargeAt(billing.Period{Number: inv.Spec.Period, Start: inv.Spec.PeriodStart.Time, End: inv.Spec.PeriodEnd.Time}))
		}
		if s.subNow.Before(due.Time) {
			s.wakeAt(due.Time)
			return ctrl.Result{}, nil
		}
		if !s.schedule.Window.Contains(s.subNow) {
			// Due while the customer may be asleep (the clock jumped, or the manager was down):
			// the charge waits for the window's next opening.
			next := s.schedule.Window.Next(s.subNow)
			inv.Status.NextAttemptAt = secondTime(next)
			s.wakeAt(next)
			return ctrl.Result{}, r.saveInvoice(ctx, s)
		}
	}
	if inv.Status.AttemptCount >= maxInvoiceAttempts {
		return ctrl.Result{}, nil
	}
	gateways, err := r.chargeGateways(ctx, s)
	if err != nil || len(gateways) == 0 {
		return ctrl.Result{}, err
	}
	// Written ahead: the attempt is stored before its Payment exists. A pass that read a stale
	// invoice conflicts here and sends nothing.
	attempt := inv.Status.AttemptCount + 1
	name := billing.InvoicePaymentName(string(inv.UID), attempt)
	inv.Status.AttemptCount = attempt
	inv.Status.Payments = append(inv.Status.Payments, name)
	if n := len(inv.Status.Payments); n > paygatev1.MaxInvoicePayments {
		inv.Status.Payments = inv.Status.Payments[n-paygatev1.MaxInvoicePayments:]
	}
	inv.Status.NextAttemptAt = nil
	if inv.Status.Phase == "" {
		inv.Status.Phase = paygatev1.InvoiceOpen
	}
	s.latest, s.latestMissing = nil, true
	if err := r.saveInvoice(ctx, s); err != nil {
		return ctrl.Result{}, fmt.Errorf("recording charge %s of invoice %s: %w", name, inv.Name, err)
	}
	hitFailpoint(failpoint.ChargeRecorded)
	sub.Status.NextChargeAt = nil
	return r.sendCharge(ctx, s, name)
}

// firstCharge reports whether the invoice's newest recorded charge is the subscription's first,
// which is sent at once (the customer is signing up), not only inside the charging window.
func (s *subscriptionScope) firstCharge() bool {
	return s.firstInvoice && s.invoice != nil && s.invoice.Status.AttemptCount <= 1
}

// unrecordCharge takes back the newest recorded charge, whose Payment was never created (the API
// server confirmed it), and schedules the charge at the charging window's next opening. Under the
// optimistic lock: a pass that read a stale invoice conflicts and takes back nothing.
func (r *SubscriptionReconciler) unrecordCharge(ctx context.Context, s *subscriptionScope) (ctrl.Result, error) {
	inv := s.invoice
	name := inv.Status.Payments[len(inv.Status.Payments)-1]
	inv.Status.Payments = inv.Status.Payments[:len(inv.Status.Payments)-1]
	inv.Status.AttemptCount--
	next := s.schedule.Window.Next(s.subNow)
	inv.Status.NextAttemptAt = secondTime(next)
	s.latestMissing = false
	if err := r.saveInvoice(ctx, s); err != nil {
		return ctrl.Result{}, fmt.Errorf("taking back charge %s of invoice %s, recorded but never sent: %w", name, inv.Name, err)
	}
	s.wakeAt(next)
	r.Recorder.Eventf(s.sub, nil, corev1.EventTypeNormal, ReasonChargeDeferred, "Charge",
		"Charge %s of invoice %s was recorded but not sent before the charging window closed; it is sent when the window opens", name, inv.Name)
	return ctrl.Result{}, nil
}

// sendCharge creates the charge Payment recorded as name: a push to the subscription's phone for
// the invoice's amount, labelled with the invoice and the subscription; the payment controller pushes it. A Payment that
// exists already (the create was repeated) is left as it is: each attempt is pushed once.
func (r *SubscriptionReconciler) sendCharge(ctx context.Context, s *subscriptionScope, name string) (ctrl.Result, error) {
	sub, inv := s.sub, s.invoice
	gateways, err := r.chargeGateways(ctx, s)
	if err != nil || len(gateways) == 0 {
		return ctrl.Result{}, err
	}
	lifetime := r.ChargeLifetime
	if lifetime <= 0 {
		lifetime = DefaultChargeLifetime
	}
	if s.merchant != nil && s.merchant.Spec.CheckoutLifetimeMinutes > 0 {
		lifetime = time.Duration(s.merchant.Spec.CheckoutLifetimeMinutes) * time.Minute
	}
	// The charge's deadline: its lifetime, and for a scheduled charge no later than the charging
	// window's close (on the subscription's clock), so that nothing is pushed outside the window.
	expires := s.now.Add(lifetime)
	if !s.firstCharge() {
		if left := s.schedule.Window.Closes(s.subNow).Sub(s.subNow); left < lifetime {
			expires = s.now.Add(left)
		}
	}
	description := fmt.Sprintf("%s, period %d", sub.Spec.PlanCode, inv.Spec.Period)
	if s.plan != nil {
		description = fmt.Sprintf("%s, period %d", s.plan.Spec.Name, inv.Spec.Period)
	}
	p := &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: inv.Namespace, Name: name,
			Labels: map[string]string{paygatev1.LabelMerchant: sub.Spec.MerchantRef.Name, paygatev1.LabelEnvironment: string(sub.Spec.Environment),
				paygatev1.LabelInvoice: inv.Name, paygatev1.LabelSubscription: sub.Name},
		},
		Spec: paygatev1.PaymentSpec{
			MerchantRef: sub.Spec.MerchantRef, Environment: sub.Spec.Environment, MerchantReference: inv.Name,
			Amount: inv.Spec.Amount, Currency: inv.Spec.Currency, Mode: paygatev1.PaymentModePush,
			Customer: paygatev1.Customer{Phone: sub.Spec.CustomerPhone}, Description: description, Gateways: gateways,
			ExpiresAt: metav1.NewTime(expires.Truncate(time.Second)), CreatedAt: ptrTime(s.now),
			PushRequest: &paygatev1.PushRequest{Sequence: 1, Phone: sub.Spec.CustomerPhone, RequestedAt: *ptrTime(s.now)},
		},
	}
	// No owner reference: deleting the subscription or the invoice never deletes a charge, whose
	// money may have moved (docs/billing.md, Deleting billing objects). The labels tie it to both.
	if err := r.Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, fmt.Errorf("creating charge %s of invoice %s: %w", name, inv.Name, err)
	}
	s.latest, s.latestMissing = p, false
	r.Recorder.Eventf(sub, nil, corev1.EventTypeNormal, ReasonChargeStarted, "Charge", "Charging %s %s for invoice %s (attempt %d) with %s",
		inv.Spec.Amount, inv.Spec.Currency, inv.Name, inv.Status.AttemptCount, name)
	return ctrl.Result{}, nil
}

// chargeGateways are the gateways a charge may go through, resolved as the apiserver resolves a
// push payment's (the merchant's selection, else every active automatic gateway of the currency
// in the environment, within their amount limits), read from the API server when the cache
// leaves none. With none, the subscription waits (NoPaymentMethod) and nothing is recorded.
func (r *SubscriptionReconciler) chargeGateways(ctx context.Context, s *subscriptionScope) ([]paygatev1.GatewayCode, error) {
	inv := s.invoice
	amount, err := money.ParseAmount(string(inv.Spec.Amount))
	if err != nil {
		return nil, fmt.Errorf("the amount of invoice %s: %w", inv.Name, err)
	}
	readers := []client.Reader{r.Client}
	if r.APIReader != nil {
		readers = append(readers, r.APIReader)
	}
	for _, reader := range readers {
		gateways, err := eligibleChargeGateways(ctx, reader, s.merchant, inv.Spec.Currency, inv.Spec.Environment, amount)
		if err != nil {
			return nil, err
		}
		if len(gateways) > 0 {
			return gateways, nil
		}
	}
	s.block(ReasonNoPaymentMethod, "No payment method can carry a charge of "+string(inv.Spec.Amount)+" "+string(inv.Spec.Currency)+" for this merchant; retrying")
	s.retry = true
	return nil, nil
}

// eligibleChargeGateways resolves, from what reader holds, the gateways a charge of amount in
// currency may go through for merchant m in env, in checkout order.
func eligibleChargeGateways(ctx context.Context, reader client.Reader, m *paygatev1.Merchant, currency paygatev1.CurrencyCode,
	env paygatev1.Environment, amount money.Amount) ([]paygatev1.GatewayCode, error) {
	var gateways paygatev1.GatewayList
	if err := reader.List(ctx, &gateways); err != nil {
		return nil, fmt.Errorf("listing gateways: %w", err)
	}
	var selections paygatev1.GatewaySelectionList
	if err := reader.List(ctx, &selections, client.InNamespace(m.Namespace)); err != nil {
		return nil, fmt.Errorf("listing gateway selections: %w", err)
	}
	selections.Items = slices.DeleteFunc(selections.Items, func(g paygatev1.GatewaySelection) bool {
		return g.Spec.MerchantRef.Name != m.Name
	})
	sel, _ := eligibility.EffectiveSelection(selections.Items)
	res := eligibility.ResolveGateways(m, sel, gateways.Items, eligibility.Request{Currency: currency, Environment: env})
	var codes []paygatev1.GatewayCode
	for _, g := range eligibility.WithinLimits(res.Gateways, amount) {
		codes = append(codes, g.Code())
	}
	return codes, nil
}
