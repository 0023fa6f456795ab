// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// PredictTimeout bounds pawaPay's provider prediction: the push waits for it, and without an
// answer in time the payment's gateway order decides.
const PredictTimeout = 3 * time.Second

// ProviderPredictor predicts the pawaPay provider (mobile network) of a phone number, asking with
// the account of a pawapay gateway; it returns the provider code, e.g. VODACOM_TZA.
type ProviderPredictor interface {
	PredictGatewayProvider(ctx context.Context, gw *paygatev1.Gateway, phone string) (string, error)
}

// predictorOf is the predictor of a manager's providers (a provider.Registry predicts with its
// pawaPay adapters); nil when they do not predict (the order decides).
func predictorOf(p Providers) ProviderPredictor {
	pp, _ := p.(ProviderPredictor)
	return pp
}

// predictedGateway picks the gateway of a push without a requested gateway from those in service,
// in the payment's order: the first, unless two or more of them are pawapay gateways whose
// payments in this environment go to pawaPay. Then pawaPay predicts the customer's provider from
// the push's phone number (asked once, with the account of the first of those gateways, within
// PredictTimeout), and the gateway whose spec.pawapay.provider is the prediction is preferred. A
// prediction that fails or names none of them leaves the first: prediction never fails a payment.
// With 0 or 1 such gateway nothing is asked (the network call would change nothing).
func (r *PaymentReconciler) predictedGateway(ctx context.Context, p *paygatev1.Payment, inService []*paygatev1.Gateway) *paygatev1.Gateway {
	if len(inService) == 0 {
		return nil
	}
	var pawapay []*paygatev1.Gateway
	for _, gw := range inService {
		if gw.Spec.Provider == paygatev1.ProviderPawapay && gw.Spec.Pawapay != nil &&
			(p.Spec.Environment == paygatev1.EnvironmentProduction || gw.SandboxToProvider()) {
			pawapay = append(pawapay, gw)
		}
	}
	phone := string(p.Spec.Customer.Phone)
	if pr := p.Spec.PushRequest; pr != nil && pr.Phone != "" {
		phone = string(pr.Phone)
	}
	predictor := predictorOf(r.Providers)
	if len(pawapay) < 2 || predictor == nil || phone == "" {
		return inService[0]
	}
	pctx, cancel := context.WithTimeout(ctx, PredictTimeout)
	defer cancel()
	code, err := predictor.PredictGatewayProvider(pctx, pawapay[0], phone)
	log := ctrl.LoggerFrom(ctx).WithValues("payment", p.Namespace+"/"+p.Name)
	if err != nil {
		// The adapter's errors carry no token; the phone number is not logged.
		log.Info("pawaPay could not predict the customer's provider; the payment's gateway order decides",
			"askedWith", pawapay[0].Name, "error", err.Error())
		return inService[0]
	}
	for _, gw := range pawapay {
		if gw.Spec.Pawapay.Provider == code {
			return gw
		}
	}
	log.V(1).Info("pawaPay predicted a provider none of the payment's gateways carries; the payment's gateway order decides",
		"predicted", code)
	return inService[0]
}
