// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "strings"

// AnnotationProviderReceipt on a Payment records the provider's receipt of a collection, learnt
// from a verified callback ("<attempt reference> <receipt>", written by the apiserver): the
// M-PESA receipt number (MpesaReceiptNumber) of a successful M-Pesa Express callback, which
// Daraja gives nowhere else and which a reversal (a Daraja refund) must name. It is recorded
// whatever the payment's phase, since the callback may arrive after the controller confirmed the
// payment by query; a later successful callback replaces it. A receipt is one token of at most
// MaxProviderReceiptLength printable ASCII characters (ValidProviderReceipt); the apiserver
// refuses a callback carrying anything else.
//
// Refunds use the annotations of the payment callbacks too: AnnotationProviderResult on a Refund
// records the result of its Daraja reversal, posted to the refund's own result URL, for the
// refund's attempt reference ("<namespace>.<name>.r").
const AnnotationProviderReceipt = "paygate.dev/provider-receipt"

// MaxProviderReceiptLength is the longest receipt AnnotationProviderReceipt records (the length
// RefundedPayment.Receipt accepts).
const MaxProviderReceiptLength = 64

// ValidProviderReceipt reports whether receipt can be recorded in AnnotationProviderReceipt: one
// token of 1 to MaxProviderReceiptLength printable ASCII characters.
func ValidProviderReceipt(receipt string) bool {
	if receipt == "" || len(receipt) > MaxProviderReceiptLength {
		return false
	}
	for i := 0; i < len(receipt); i++ {
		if c := receipt[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// ParseProviderReceipt reads an AnnotationProviderReceipt value: the attempt reference the
// receipt belongs to, and the receipt.
func ParseProviderReceipt(v string) (reference, receipt string, ok bool) {
	fields := strings.Fields(v)
	if len(fields) != 2 || !ValidProviderReceipt(fields[1]) {
		return "", "", false
	}
	return fields[0], fields[1], true
}

// AttemptProviderReference is the provider's id for attempt a of p: the one its acceptance stored,
// else the one a verified callback told (AnnotationProviderReference); "" when neither.
func (p *Payment) AttemptProviderReference(a *PushAttempt) string {
	if a.ProviderReference != "" {
		return a.ProviderReference
	}
	if ref, id, ok := ParseProviderReference(p.Annotations[AnnotationProviderReference]); ok && ref == a.Reference {
		return id
	}
	return ""
}

// AttemptReceipt is the provider's receipt of attempt a of p (M-Pesa's receipt number), from
// AnnotationProviderReceipt when it names that attempt; "" otherwise.
func (p *Payment) AttemptReceipt(a *PushAttempt) string {
	if ref, receipt, ok := ParseProviderReceipt(p.Annotations[AnnotationProviderReceipt]); ok && ref == a.Reference {
		return receipt
	}
	return ""
}
