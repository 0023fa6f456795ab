// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package index registers the cache field indexes that the reconcilers and the apiserver share.
package index

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// Field indexes on the informer caches.
const (
	// MerchantCurrency indexes Merchants by supported currency.
	MerchantCurrency = "spec.currencies"
	// SelectionMerchant indexes GatewaySelections by the Merchant they belong to.
	SelectionMerchant = "spec.merchantRef.name"
	// MerchantBusinessID indexes Merchants by "<environment>/<business ID>", so the
	// apiserver finds the merchant of an X-Merchant-Key without a scan.
	MerchantBusinessID = "status.businessID"
	// PaymentName indexes Payments by name across namespaces: hosted checkout links carry only
	// the trx_id.
	PaymentName = "trxID"
)

// Setup registers the field indexes the reconcilers use (the apiserver reads them too).
func Setup(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &paygatev1.Merchant{}, MerchantCurrency, func(o client.Object) []string {
		m := o.(*paygatev1.Merchant)
		out := make([]string, 0, len(m.Spec.Currencies))
		for _, c := range m.Spec.Currencies {
			out = append(out, string(c))
		}
		return out
	}); err != nil {
		return fmt.Errorf("indexing merchants by currency: %w", err)
	}
	if err := idx.IndexField(ctx, &paygatev1.Merchant{}, MerchantBusinessID, MerchantBusinessIDs); err != nil {
		return fmt.Errorf("indexing merchants by business ID: %w", err)
	}
	if err := idx.IndexField(ctx, &paygatev1.GatewaySelection{}, SelectionMerchant, func(o client.Object) []string {
		return []string{o.(*paygatev1.GatewaySelection).Spec.MerchantRef.Name}
	}); err != nil {
		return fmt.Errorf("indexing gateway selections by merchant: %w", err)
	}
	return nil
}

// SetupAPIServer registers, besides Setup's, the indexes only the apiserver reads: payments by
// name for hosted checkout. The manager does not keep them (each costs memory per cached payment).
func SetupAPIServer(ctx context.Context, idx client.FieldIndexer) error {
	if err := Setup(ctx, idx); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &paygatev1.Payment{}, PaymentName, func(o client.Object) []string {
		return []string{o.GetName()}
	}); err != nil {
		return fmt.Errorf("indexing payments by name: %w", err)
	}
	return nil
}

// MerchantBusinessIDs returns the MerchantBusinessID values of a Merchant.
func MerchantBusinessIDs(o client.Object) []string {
	m := o.(*paygatev1.Merchant)
	var out []string
	if id := m.Status.Sandbox.BusinessID; id != "" {
		out = append(out, BusinessIDIndexKey(paygatev1.EnvironmentSandbox, id))
	}
	if id := m.Status.Production.BusinessID; id != "" {
		out = append(out, BusinessIDIndexKey(paygatev1.EnvironmentProduction, id))
	}
	return out
}

// BusinessIDIndexKey is the MerchantBusinessID value of a business ID in env.
func BusinessIDIndexKey(env paygatev1.Environment, businessID string) string {
	return string(env) + "/" + businessID
}
