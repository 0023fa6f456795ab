// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"errors"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/provider"
)

// providerCallback receives the upstream provider's results on an internal route: it is not
// part of the merchant API and should not be exposed beyond the provider's network.
func (s *Server) providerCallback(w http.ResponseWriter, r *http.Request) {
	body, apiErr := readBody(r)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	// Find the payment the reference names, then verify with its gateway's callback secret.
	ref := callbackReference(body)
	ns, trx, ok := splitReference(ref)
	if !ok {
		writeError(w, &APIError{Status: http.StatusBadRequest, Label: LabelBadRequest, Message: "Unknown reference."})
		return
	}
	p := &paygatev1.Payment{}
	if err := s.opts.APIReader.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: trx}, p); err != nil {
		if apierrors.IsNotFound(err) {
			writeError(w, &APIError{Status: http.StatusNotFound, Label: LabelNotFound, Message: "Unknown reference."})
			return
		}
		s.serverError("Reading a payment for a callback", err).write(w)
		return
	}
	var gwCode paygatev1.GatewayCode
	for _, a := range p.Status.Attempts {
		if a.Reference == ref {
			gwCode = a.Gateway
		}
	}
	gw := &paygatev1.Gateway{}
	if gwCode == "" || s.opts.Cache.Get(r.Context(), client.ObjectKey{Name: string(gwCode)}, gw) != nil || gw.Spec.Upstream == nil {
		writeError(w, &APIError{Status: http.StatusNotFound, Label: LabelNotFound, Message: "Unknown reference."})
		return
	}
	secret, err := provider.UpstreamSecret(r.Context(), s.opts.Cache, gw)
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
	// A callback wakes the controller for a pending payment; for a failed one only when the
	// provider claims success, so that money arriving too late is found and reported.
	if !p.Terminal() || (p.Status.Phase == paygatev1.PaymentFailed && cb.Status == provider.StatusSuccess) {
		patch := client.MergeFrom(p.DeepCopy())
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[paygatev1.AnnotationProviderCallback] = string(cb.Status) + " " + s.opts.Clock.Now().UTC().Format(time.RFC3339Nano)
		if err := s.opts.Writer.Patch(r.Context(), p, patch); err != nil {
			s.serverError("Recording a provider callback", err).write(w)
			return
		}
	}
	s.opts.Log.Info("Provider callback", "reference", ref, "status", cb.Status, "terminalAlready", p.Terminal())
	writeJSON(w, http.StatusOK, map[string]string{"status": "received"})
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
