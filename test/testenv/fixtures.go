// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // fixtures for Ginkgo suites
	. "github.com/onsi/gomega"    //nolint:revive // fixtures for Ginkgo suites
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// Fixtures the envtest suites share: the controllers suite and test/e2e build the same gateways
// and merchants and isolate their specs the same way.

// UniqueName gives objects of different specs different names: prefix, a dash and six lowercase
// hex digits.
func UniqueName(prefix string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return strings.ToLower(prefix) + "-" + hex.EncodeToString(b)
}

// Namespace creates a namespace for one spec and deletes it when the spec ends.
func Namespace(ctx context.Context, c client.Client, prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	Expect(c.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(c.Delete(ctx, ns))).To(Succeed()) })
	return ns.Name
}

// DeleteAfter deletes an object when the spec ends.
func DeleteAfter(ctx context.Context, c client.Client, obj client.Object) {
	DeferCleanup(func() { Expect(client.IgnoreNotFound(c.Delete(ctx, obj))).To(Succeed()) })
}

// Gateway is an active, automatic sandbox gateway of currency with a 2.5% fee and a unique name;
// mods adjust it before it is returned (nothing is created).
func Gateway(currency paygatev1.CurrencyCode, mods ...func(*paygatev1.Gateway)) *paygatev1.Gateway {
	g := &paygatev1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: UniqueName(string(currency) + "-gw")},
		Spec: paygatev1.GatewaySpec{
			DisplayName: "Mobile money " + string(currency), Currency: currency,
			Type: paygatev1.GatewayTypeAutomatic, Provider: paygatev1.ProviderSandbox,
			Fees: paygatev1.GatewayFees{Percent: "2.5", Fixed: "0"},
		},
	}
	for _, m := range mods {
		m(g)
	}
	return g
}

// Merchant is a pending merchant "Duka <name>" selling in TZS with an active TZS wallet; mods
// adjust it before it is returned (nothing is created).
func Merchant(ns, name string, mods ...func(*paygatev1.Merchant)) *paygatev1.Merchant {
	m := &paygatev1.Merchant{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: paygatev1.MerchantSpec{
			DisplayName: "Duka " + name, Owner: "owner@duka.example",
			Currencies: []paygatev1.CurrencyCode{"TZS"}, Wallets: []paygatev1.Wallet{{Currency: "TZS"}},
		},
	}
	for _, mod := range mods {
		mod(m)
	}
	return m
}
