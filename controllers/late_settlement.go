// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/names"
)

// RefundReasonLateSettlement is the reason of the Refund a late settlement under the merchant's
// Refund policy creates.
const RefundReasonLateSettlement = "late settlement"

// +kubebuilder:rbac:groups=paygate.dev,resources=refunds,verbs=create

// lateSettlementPolicy reads the policy of p's merchant (spec.lateSettlement, Flag when unset). A
// merchant that is gone is Flag: nothing is counted or sent without a merchant's word.
func (r *PaymentReconciler) lateSettlementPolicy(ctx context.Context, p *paygatev1.Payment) (paygatev1.LateSettlementPolicy, error) {
	m := &paygatev1.Merchant{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.MerchantRef.Name}, m); err != nil {
		if apierrors.IsNotFound(err) {
			return paygatev1.LateSettlementFlag, nil
		}
		return "", fmt.Errorf("reading merchant %s for its late-settlement policy: %w", p.Spec.MerchantRef.Name, err)
	}
	return m.Spec.LateSettlementPolicy(), nil
}

// countsInLedger reports whether p's net amount counts in its merchant's balance (SumPayments and
// the ledger index agree on it): a successful payment, or a failed one the provider settled late
// (Payment.SettledLate) whose net amount the merchant's Credit or Refund policy stored then; under
// Flag none was stored and the payment counts nothing.
func countsInLedger(p *paygatev1.Payment) bool {
	return p.Status.Phase == paygatev1.PaymentSuccess || (p.SettledLate() && p.Status.NetAmount != "")
}

// lateRefundName is the name of the Refund of p's late settlement: a UUID (refund ids are) derived
// from the payment's UID, so that every pass that finds the late settlement names the same one.
func lateRefundName(p *paygatev1.Payment) string {
	return names.DeriveUUID("late-settlement-refund", string(p.UID))
}

// settleLate applies the merchant's policy to payment s.payment, whose attempt a the provider
// settled after the payment failed, before the LateSettlement condition is written; it returns
// what the condition's message says of the money.
//
//   - Flag: nothing is stored; an operator refunds or reconciles the money.
//   - Credit: status.fee and status.netAmount are stored as a success stores them (paymentFee);
//     the ledger counts the net amount (SumPayments, Payment.SettledLate).
//   - Refund: status.fee 0 and status.netAmount the whole amount are stored, so the ledger counts
//     the gross amount, and a Refund of the whole amount is created first (write-ahead: a pass
//     whose create fails writes nothing and asks the provider again; AlreadyExists means an
//     earlier pass created it), so the refund's debit nets the late money to zero.
//
// The payment stays failed.
func (r *PaymentReconciler) settleLate(ctx context.Context, s *paymentScope, a *paygatev1.PushAttempt, policy paygatev1.LateSettlementPolicy) (string, error) {
	p := s.payment
	cur, _ := money.LookupCurrency(string(p.Spec.Currency))
	switch policy {
	case paygatev1.LateSettlementCredit:
		fee, net, err := paymentFee(p, a.Fees)
		if err != nil {
			r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonFeeNotComputed, "Settle", "Fee could not be computed (%v); credited without a fee", err)
			fee, net = money.Amount{}, money.MustParseAmount(string(p.Spec.Amount))
		}
		p.Status.Fee = paygatev1.Decimal(fee.StringFixed(cur.Scale))
		p.Status.NetAmount = paygatev1.Decimal(net.StringFixed(cur.Scale))
		return fmt.Sprintf("credited to the balance (fee %s, net %s)", p.Status.Fee, p.Status.NetAmount), nil
	case paygatev1.LateSettlementRefund:
		amount, err := money.ParseAmount(string(p.Spec.Amount))
		if err != nil {
			return "", fmt.Errorf("payment %s has an unreadable amount %q: %w", p.Name, p.Spec.Amount, err)
		}
		gross := paygatev1.Decimal(amount.StringFixed(cur.Scale))
		rf := lateSettlementRefund(p, a, gross, s.now)
		if err := r.Create(ctx, rf); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating refund %s of late-settled payment %s: %w", rf.Name, p.Name, err)
		}
		p.Status.Fee = paygatev1.Decimal(money.Amount{}.StringFixed(cur.Scale))
		p.Status.NetAmount = gross
		return fmt.Sprintf("refund %s returns %s %s to the customer", rf.Name, gross, p.Spec.Currency), nil
	}
	return "refund or reconcile it", nil
}

// lateSettlementRefund is the Refund of the whole of p's late-settled amount, filled as the
// apiserver fills a merchant's refund (apiserver/refunds.go) from the attempt a that collected it.
func lateSettlementRefund(p *paygatev1.Payment, a *paygatev1.PushAttempt, amount paygatev1.Decimal, now time.Time) *paygatev1.Refund {
	dest := p.Spec.Customer.Phone
	if p.Spec.PushRequest != nil && p.Spec.PushRequest.Sequence == a.Sequence {
		dest = p.Spec.PushRequest.Phone
	}
	ref := p.AttemptProviderReference(a)
	if len(ref) > 128 { // the CRD's bound: the id is only a help
		ref = ""
	}
	receipt := p.AttemptReceipt(a)
	if len(receipt) > 64 { // the CRD's bound
		receipt = ""
	}
	return &paygatev1.Refund{
		ObjectMeta: metav1.ObjectMeta{
			Name: lateRefundName(p), Namespace: p.Namespace,
			Labels: map[string]string{paygatev1.LabelMerchant: p.Spec.MerchantRef.Name, paygatev1.LabelEnvironment: string(p.Spec.Environment),
				paygatev1.LabelPayment: p.Name, paygatev1.LabelLateSettlement: "true"},
		},
		Spec: paygatev1.RefundSpec{
			MerchantRef: p.Spec.MerchantRef, Environment: p.Spec.Environment,
			Payment: paygatev1.RefundedPayment{
				TrxID: p.Name, Amount: amount,
				AttemptReference: a.Reference, ProviderReference: ref, Receipt: receipt,
			},
			Amount:      amount,
			Currency:    p.Spec.Currency,
			Destination: dest,
			Gateway:     a.Gateway,
			Reason:      RefundReasonLateSettlement,
			CreatedAt:   metav1.NewMicroTime(now),
		},
	}
}
