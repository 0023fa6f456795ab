// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"errors"
	"net/http"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/provider"
)

// unknownReference is the answer to an upstream callback whose reference names no attempt of an
// upstream gateway (docs/upstream-provider.md, "Callbacks").
var unknownReference = &APIError{Status: http.StatusNotFound, Label: LabelNotFound, Message: "Unknown reference."}

// providerCallback receives the upstream provider's results on an internal route: it is not
// part of the merchant API and should not be exposed beyond the provider's network. The
// reference names the object: a payment's push attempt ("<namespace>.<trx_id>.<sequence>"), a
// payout's disbursement ("<namespace>.<payout>") or a refund ("<namespace>.<refund>.r"). The
// callback, verified with the secret of the attempt's upstream gateway, only wakes the object's
// controller (paygatev1.AnnotationProviderCallback), which asks the provider for the status.
func (s *Server) providerCallback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	body, apiErr := readBody(r)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	// Find the object the reference names, then verify with its gateway's callback secret.
	ref := callbackReference(body)
	if !upstreamReference(ref) {
		writeError(w, &APIError{Status: http.StatusBadRequest, Label: LabelBadRequest, Message: "Unknown reference."})
		return
	}
	o, apiErr := s.findCallbackObject(ctx, ref)
	if apiErr == unknownCallback {
		apiErr = unknownReference
	}
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	gw := &paygatev1.Gateway{}
	if s.opts.Cache.Get(ctx, client.ObjectKey{Name: string(o.gateway)}, gw) != nil || gw.Spec.Upstream == nil {
		writeError(w, unknownReference)
		return
	}
	secret, err := provider.UpstreamSecret(ctx, s.opts.Cache, gw)
	if err != nil {
		s.serverError("Reading the callback secret", err).write(w)
		return
	}
	cb, err := provider.ParseCallback(secret.Data[provider.UpstreamSecretCallbackSecret],
		r.Header.Get(provider.CallbackSignatureHeader), r.Header.Get(provider.CallbackTimestampHeader), body, s.opts.Clock.Now(), 0)
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, provider.ErrCallbackSignature) || errors.Is(err, provider.ErrCallbackTimestamp) {
			status = http.StatusUnauthorized
		}
		writeError(w, &APIError{Status: status, Label: LabelInvalidSignature, Message: "The callback could not be verified."})
		return
	}
	// The kind must be the operation the reference names: the provider's references are one
	// namespace per kind, and a refund callback about a payment's reference is about nothing
	// Paygate sent.
	if cb.Kind != upstreamCallbackKind(o) {
		s.opts.Log.Info("Provider callback of another kind than its reference's", "reference", ref, "kind", cb.Kind)
		writeError(w, unknownReference)
		return
	}
	// A callback wakes the controller for an object still under way; for a failed one only when
	// the provider claims success, so that money moved too late is found and reported.
	if apiErr := s.wakeOrRecord(ctx, o, ref, cb.Status, "", nil, ""); apiErr != nil {
		if apiErr == unknownCallback {
			apiErr = unknownReference
		}
		writeError(w, apiErr)
		return
	}
	terminal, _ := o.ended()
	s.opts.Log.Info("Provider callback", "reference", ref, "kind", cb.Kind, "status", cb.Status, "terminalAlready", terminal)
	writeJSON(w, http.StatusOK, map[string]string{"status": "received"})
}

// upstreamCallbackKind is the callback kind of the operation o's reference names.
func upstreamCallbackKind(o callbackObject) string {
	switch {
	case o.payment != nil:
		return provider.CallbackKindCollection
	case o.refund != nil:
		return provider.CallbackKindRefund
	}
	return provider.CallbackKindDisbursement
}

// upstreamReference reports whether ref has the shape of a reference Paygate sends upstream: a
// payment's ("<namespace>.<trx_id>.<sequence>", splitReference), a refund's
// ("<namespace>.<refund>.r") or a payout's ("<namespace>.<payout>").
func upstreamReference(ref string) bool {
	parts := strings.Split(ref, ".")
	switch {
	case len(parts) == 3 && parts[2] == refundReferenceSuffix, len(parts) == 2:
		return parts[0] != "" && parts[1] != "" && len(parts[0]) <= 63 && len(parts[1]) <= 253
	}
	_, _, ok := splitReference(ref)
	return ok
}

// callbackReference reads the reference field without trusting anything else in the body.
func callbackReference(body []byte) string {
	f, apiErr := decodeObject(body)
	if apiErr != nil {
		return ""
	}
	ref, _ := f.str(validation{}, "reference")
	return ref
}

// splitReference parses "<namespace>.<trx_id>.<sequence>".
func splitReference(ref string) (namespace, trxID string, ok bool) {
	parts := strings.Split(ref, ".")
	if len(parts) != 3 || !trxIDPattern.MatchString(parts[1]) || parts[0] == "" || len(parts[0]) > 63 {
		return "", "", false
	}
	return parts[0], parts[1], true
}
