// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// The API server itself rejects configuration that cannot work: the CRD schema and its CEL rules.
var _ = Describe("Configuration the API server rejects", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	expectRejected := func(obj client.Object, message string) {
		err := k8s.Create(ctx, obj)
		if err == nil {
			deleteAfter(obj)
		}
		Expect(err).To(HaveOccurred(), "expected the API server to reject it")
		Expect(err.Error()).To(ContainSubstring(message))
	}

	DescribeTable("merchants",
		func(mod func(*paygatev1.Merchant), message string) {
			expectRejected(newMerchant(ns, "bad-shop", mod), message)
		},
		Entry("a lowercase currency", func(m *paygatev1.Merchant) { m.Spec.Currencies = []paygatev1.CurrencyCode{"tzs"} }, `Unsupported value: "tzs"`),
		Entry("an unknown currency", func(m *paygatev1.Merchant) { m.Spec.Currencies = []paygatev1.CurrencyCode{"XYZ"} }, `Unsupported value: "XYZ"`),
		Entry("no currency", func(m *paygatev1.Merchant) { m.Spec.Currencies = nil; m.Spec.Wallets = nil }, "spec.currencies"),
		Entry("a currency listed twice", func(m *paygatev1.Merchant) { m.Spec.Currencies = []paygatev1.CurrencyCode{"TZS", "TZS"} }, "Duplicate value"),
		Entry("a wallet in a currency the merchant does not support", func(m *paygatev1.Merchant) {
			m.Spec.Wallets = append(m.Spec.Wallets, paygatev1.Wallet{Currency: "KES"})
		}, "every wallet must be in one of the merchant's currencies"),
		Entry("two wallets in one currency", func(m *paygatev1.Merchant) {
			m.Spec.Wallets = append(m.Spec.Wallets, paygatev1.Wallet{Currency: "TZS"})
		}, "Duplicate value"),
		Entry("a non-HTTPS production webhook URL", func(m *paygatev1.Merchant) {
			m.Spec.WebhookURLs.Production = "http://duka.example/hook"
		}, "webhookURLs.production must be an https:// URL"),
		Entry("a sandbox webhook that is not a URL", func(m *paygatev1.Merchant) {
			m.Spec.WebhookURLs.Sandbox = "ftp://duka.example/hook"
		}, "webhookURLs.sandbox must be an http:// or https:// URL"),
		Entry("a malformed settlement number", func(m *paygatev1.Merchant) { m.Spec.SettlementNumber = "0712 345 678" }, "spec.settlementNumber"),
		Entry("a per-currency settlement number in a currency the merchant does not support", func(m *paygatev1.Merchant) {
			m.Spec.SettlementNumbers = settlementNumbers("KES", "+254712345678")
		}, "every settlement number in settlementNumbers must be in one of the merchant's currencies"),
		Entry("a Tanzanian number for KES", func(m *paygatev1.Merchant) {
			m.Spec.Currencies = []paygatev1.CurrencyCode{"TZS", "KES"}
			m.Spec.SettlementNumbers = settlementNumbers("KES", "+255712345678")
		}, "a settlement number must be of its currency's country: +233 for GHS, +254 for KES"),
		Entry("a Kenyan number for TZS", func(m *paygatev1.Merchant) {
			m.Spec.Currencies = []paygatev1.CurrencyCode{"TZS", "KES"}
			m.Spec.SettlementNumbers = settlementNumbers("KES", "+254712345678", "TZS", "+254722000111")
		}, "a settlement number must be of its currency's country"),
		Entry("a per-currency settlement number in a currency without a known country", func(m *paygatev1.Merchant) {
			m.Spec.Currencies = []paygatev1.CurrencyCode{"TZS", "USD"}
			m.Spec.SettlementNumbers = settlementNumbers("USD", "+12025550123")
		}, "a settlement number can be set per currency only for GHS, KES, MWK, NGN, RWF, TZS, UGX and ZMW"),
		Entry("two settlement numbers in one currency", func(m *paygatev1.Merchant) {
			m.Spec.SettlementNumbers = settlementNumbers("TZS", "+255712345678", "TZS", "+255754000111")
		}, "Duplicate value"),
		Entry("a malformed per-currency settlement number", func(m *paygatev1.Merchant) {
			m.Spec.SettlementNumbers = settlementNumbers("TZS", "0712 345 678")
		}, "spec.settlementNumbers[0].number"),
		Entry("a per-currency settlement number without its number", func(m *paygatev1.Merchant) {
			m.Spec.SettlementNumbers = []paygatev1.CurrencySettlementNumber{{Currency: "TZS"}}
		}, "spec.settlementNumbers[0].number"),
		Entry("more than 8 per-currency settlement numbers", func(m *paygatev1.Merchant) {
			m.Spec.Currencies = []paygatev1.CurrencyCode{"GHS", "KES", "MWK", "NGN", "RWF", "TZS", "UGX", "ZMW", "USD"}
			m.Spec.SettlementNumbers = settlementNumbers("GHS", "+233241234567", "KES", "+254712345678", "MWK", "+265991234567",
				"NGN", "+2348031234567", "RWF", "+250781234567", "TZS", "+255712345678", "UGX", "+256772123456", "ZMW", "+260971234567",
				"USD", "+12025550123")
		}, "must have at most 8 items"),
		Entry("an unknown business status", func(m *paygatev1.Merchant) { m.Spec.BusinessStatus = "active" }, `Unsupported value: "active"`),
		Entry("an unknown KYB status", func(m *paygatev1.Merchant) { m.Spec.KYBStatus = "done" }, `Unsupported value: "done"`),
		Entry("a malformed allowed domain", func(m *paygatev1.Merchant) {
			m.Spec.AllowedRedirectDomains = []paygatev1.DomainName{"https://duka.example"}
		}, "spec.allowedRedirectDomains"),
		Entry("a zero rate limit", func(m *paygatev1.Merchant) { m.Spec.RateLimit = &paygatev1.RateLimit{RequestsPerMinute: 0} }, "spec.rateLimit.requestsPerMinute"),
		Entry("a name longer than 40 characters", func(m *paygatev1.Merchant) {
			m.Name = "a-business-name-that-is-far-too-long-for-secrets"
		}, "a Merchant's name is at most 40 characters"),
		Entry("an empty display name", func(m *paygatev1.Merchant) { m.Spec.DisplayName = "" }, "spec.displayName"),
	)

	DescribeTable("gateways",
		func(mod func(*paygatev1.Gateway), message string) {
			expectRejected(newGateway("TZS", mod), message)
		},
		Entry("a lowercase currency", func(g *paygatev1.Gateway) { g.Spec.Currency = "tzs" }, `Unsupported value: "tzs"`),
		Entry("a negative fixed fee", func(g *paygatev1.Gateway) { g.Spec.Fees.Fixed = "-1" }, "spec.fees.fixed"),
		Entry("a negative percent", func(g *paygatev1.Gateway) { g.Spec.Fees.Percent = "-2.5" }, "spec.fees.percent"),
		Entry("a percent above 100", func(g *paygatev1.Gateway) { g.Spec.Fees.Percent = "150" }, "fees.percent must be at most 100"),
		Entry("a float amount in exponent form", func(g *paygatev1.Gateway) { g.Spec.MinAmount = ptr.To(paygatev1.Decimal("1e3")) }, "spec.minAmount"),
		Entry("minimum above maximum", func(g *paygatev1.Gateway) {
			g.Spec.MinAmount, g.Spec.MaxAmount = ptr.To(paygatev1.Decimal("5000")), ptr.To(paygatev1.Decimal("1000.50"))
		}, "minAmount must not be above maxAmount"),
		Entry("an unknown type", func(g *paygatev1.Gateway) { g.Spec.Type = "semi" }, `Unsupported value: "semi"`),
		Entry("an unknown provider", func(g *paygatev1.Gateway) { g.Spec.Provider = "paypal" }, `Unsupported value: "paypal"`),
		Entry("a code with an underscore", func(g *paygatev1.Gateway) { g.Name = "mpesa_tz" }, "metadata.name"),
		Entry("an unknown simulation", func(g *paygatev1.Gateway) { g.Spec.Simulation = "Always" }, `Unsupported value: "Always"`),
		Entry("simulating production on an upstream gateway", func(g *paygatev1.Gateway) {
			g.Spec.Provider, g.Spec.Simulation = paygatev1.ProviderUpstream, paygatev1.SimulationSandboxAndProduction
			g.Spec.Upstream = &paygatev1.UpstreamConfig{BaseURL: "https://provider.example", SecretRef: paygatev1.SecretReference{Namespace: "paygate-system", Name: "upstream"}}
		}, "simulation SandboxAndProduction needs provider sandbox"),
		Entry("provider pawapay without spec.pawapay", func(g *paygatev1.Gateway) { g.Spec.Provider = paygatev1.ProviderPawapay },
			"spec.pawapay is required with provider pawapay"),
		Entry("spec.pawapay on a sandbox gateway", func(g *paygatev1.Gateway) { g.Spec.Pawapay = celPawapay() },
			"spec.pawapay is required with provider pawapay and allowed only with it"),
		Entry("provider daraja without spec.daraja", func(g *paygatev1.Gateway) { g.Spec.Currency, g.Spec.Provider = "KES", paygatev1.ProviderDaraja },
			"spec.daraja is required with provider daraja"),
		Entry("spec.daraja beside spec.pawapay", func(g *paygatev1.Gateway) {
			g.Spec.Provider, g.Spec.Pawapay, g.Spec.Daraja = paygatev1.ProviderPawapay, celPawapay(), celDaraja()
		}, "spec.daraja is required with provider daraja and allowed only with it"),
		Entry("spec.upstream on a pawapay gateway", func(g *paygatev1.Gateway) {
			g.Spec.Provider, g.Spec.Pawapay = paygatev1.ProviderPawapay, celPawapay()
			g.Spec.Upstream = &paygatev1.UpstreamConfig{BaseURL: "https://provider.example", SecretRef: paygatev1.SecretReference{Namespace: "paygate-system", Name: "upstream"}}
		}, "spec.upstream is not allowed with provider pawapay or daraja"),
		Entry("a daraja gateway in TZS", func(g *paygatev1.Gateway) { g.Spec.Provider, g.Spec.Daraja = paygatev1.ProviderDaraja, celDaraja() },
			"a daraja gateway collects KES"),
		Entry("a malformed pawaPay provider code", func(g *paygatev1.Gateway) {
			g.Spec.Provider, g.Spec.Pawapay = paygatev1.ProviderPawapay, celPawapay()
			g.Spec.Pawapay.Provider = "vodacom-tza"
		}, "spec.pawapay.provider"),
		Entry("a plain-http pawaPay URL", func(g *paygatev1.Gateway) {
			g.Spec.Provider, g.Spec.Pawapay = paygatev1.ProviderPawapay, celPawapay()
			g.Spec.Pawapay.BaseURL = "http://api.pawapay.io"
		}, "pawapay.baseURL must be sandbox, production, an https URL"),
		Entry("an unknown Daraja transaction type", func(g *paygatev1.Gateway) {
			g.Spec.Currency, g.Spec.Provider, g.Spec.Daraja = "KES", paygatev1.ProviderDaraja, celDaraja()
			g.Spec.Daraja.TransactionType = "CustomerPayBill"
		}, `Unsupported value: "CustomerPayBill"`),
		Entry("a six-letter Daraja short code", func(g *paygatev1.Gateway) {
			g.Spec.Currency, g.Spec.Provider, g.Spec.Daraja = "KES", paygatev1.ProviderDaraja, celDaraja()
			g.Spec.Daraja.ShortCode = "abcdef"
		}, "spec.daraja.shortCode"),
		Entry("sandbox Provider on a sandbox gateway", func(g *paygatev1.Gateway) { g.Spec.Sandbox = paygatev1.SandboxProvider },
			"sandbox Provider needs provider pawapay or daraja"),
		Entry("sandbox Provider against pawaPay production", func(g *paygatev1.Gateway) {
			g.Spec.Provider, g.Spec.Pawapay, g.Spec.Sandbox = paygatev1.ProviderPawapay, celPawapay(), paygatev1.SandboxProvider
			g.Spec.Pawapay.BaseURL = paygatev1.BaseURLProduction
		}, "sandbox Provider would send sandbox payments to pawaPay production"),
		Entry("sandbox Provider against Daraja production by default", func(g *paygatev1.Gateway) {
			g.Spec.Currency, g.Spec.Provider, g.Spec.Daraja, g.Spec.Sandbox = "KES", paygatev1.ProviderDaraja, celDaraja(), paygatev1.SandboxProvider
			g.Spec.Daraja.BaseURL = ""
		}, "sandbox Provider would send sandbox payments to Daraja production"),
		Entry("simulating production on a pawapay gateway", func(g *paygatev1.Gateway) {
			g.Spec.Provider, g.Spec.Pawapay, g.Spec.Simulation = paygatev1.ProviderPawapay, celPawapay(), paygatev1.SimulationSandboxAndProduction
		}, "simulation SandboxAndProduction needs provider sandbox"),
	)

	It("accepts a settlement number per currency beside the single one, and keeps each in the merchant's currencies", func() {
		m := newMerchant(ns, "two-countries", func(m *paygatev1.Merchant) {
			m.Spec.Currencies = []paygatev1.CurrencyCode{"TZS", "KES"}
			m.Spec.Wallets = []paygatev1.Wallet{{Currency: "TZS"}, {Currency: "KES"}}
			m.Spec.SettlementNumber = "+255712345678"
			m.Spec.SettlementNumbers = settlementNumbers("KES", "+254712345678", "TZS", "+255754000111")
		})
		Expect(k8s.Create(ctx, m)).To(Succeed())
		// Every currency with a phone region takes a number of its country.
		all := newMerchant(ns, "eight-countries", func(m *paygatev1.Merchant) {
			m.Spec.Currencies = []paygatev1.CurrencyCode{"GHS", "KES", "MWK", "NGN", "RWF", "TZS", "UGX", "ZMW"}
			m.Spec.Wallets = nil
			m.Spec.SettlementNumbers = settlementNumbers("GHS", "+233241234567", "KES", "+254712345678", "MWK", "+265991234567",
				"NGN", "+2348031234567", "RWF", "+250781234567", "TZS", "+255712345678", "UGX", "+256772123456", "ZMW", "+260971234567")
		})
		Expect(k8s.Create(ctx, all)).To(Succeed())

		// Dropping KES from the currencies while its settlement number stays is refused.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), m)).To(Succeed())
		m.Spec.Currencies, m.Spec.Wallets = []paygatev1.CurrencyCode{"TZS"}, []paygatev1.Wallet{{Currency: "TZS"}}
		err := k8s.Update(ctx, m)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("every settlement number in settlementNumbers must be in one of the merchant's currencies"))
	})

	It("accepts pawapay and daraja gateways with defaults filled in", func() {
		pg := newGateway("TZS", func(g *paygatev1.Gateway) {
			g.Spec.Provider, g.Spec.Pawapay = paygatev1.ProviderPawapay, celPawapay()
			g.Spec.Pawapay.BaseURL, g.Spec.Pawapay.CredentialsSecretRef.Key = "", ""
		})
		Expect(k8s.Create(ctx, pg)).To(Succeed())
		deleteAfter(pg)
		Expect(pg.Spec.Pawapay.BaseURL).To(Equal(paygatev1.BaseURLProduction))
		Expect(pg.Spec.Pawapay.CredentialsSecretRef.Key).To(Equal("token"))
		Expect(pg.Spec.Sandbox).To(Equal(paygatev1.SandboxSimulator))
		dg := newGateway("KES", func(g *paygatev1.Gateway) {
			g.Spec.Provider, g.Spec.Daraja, g.Spec.Sandbox = paygatev1.ProviderDaraja, celDaraja(), paygatev1.SandboxProvider
		})
		Expect(k8s.Create(ctx, dg)).To(Succeed())
		deleteAfter(dg)
		Expect(dg.Spec.Daraja.TransactionType).To(Equal(paygatev1.DarajaTransactionType("CustomerPayBillOnline")))
	})

	It("accepts equal minimum and maximum and fractional fees", func() {
		g := newGateway("TZS", func(g *paygatev1.Gateway) {
			g.Spec.MinAmount, g.Spec.MaxAmount = ptr.To(paygatev1.Decimal("1000")), ptr.To(paygatev1.Decimal("1000.00"))
			g.Spec.Fees = paygatev1.GatewayFees{Percent: "1.2345", Fixed: "0.50"}
		})
		Expect(k8s.Create(ctx, g)).To(Succeed())
		deleteAfter(g)
	})

	It("keeps a gateway's currency immutable", func() {
		g := createGateway("TZS")
		g.Spec.Currency = "KES"
		err := k8s.Update(ctx, g)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("currency is immutable"))
	})

	It("rejects a gateway code listed twice in a selection and a changed merchantRef", func() {
		sel := &paygatev1.GatewaySelection{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dup"},
			Spec: paygatev1.GatewaySelectionSpec{
				MerchantRef: paygatev1.MerchantReference{Name: "shop"},
				Gateways:    []paygatev1.GatewayCode{"mpesa-tz", "mpesa-tz"},
			},
		}
		expectRejected(sel, "Duplicate value")

		sel.Spec.Gateways = []paygatev1.GatewayCode{"mpesa-tz", "Tigo Pesa"}
		expectRejected(sel, "spec.gateways")

		sel.Spec.Gateways = []paygatev1.GatewayCode{"mpesa-tz"}
		Expect(k8s.Create(ctx, sel)).To(Succeed())
		sel.Spec.MerchantRef.Name = "other-shop"
		err := k8s.Update(ctx, sel)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("merchantRef is immutable"))
	})
})

// celPawapay is a valid spec.pawapay for the schema's validation tests (no Secret behind it).
func celPawapay() *paygatev1.PawapayConfig {
	return &paygatev1.PawapayConfig{BaseURL: paygatev1.BaseURLSandbox, Provider: "VODACOM_TZA", Country: "TZA",
		CredentialsSecretRef: paygatev1.PawapayCredentialsReference{Namespace: "paygate-system", Name: "pawapay", Key: "token"}}
}

// celDaraja is a valid spec.daraja for the schema's validation tests (no Secret behind it).
func celDaraja() *paygatev1.DarajaConfig {
	return &paygatev1.DarajaConfig{BaseURL: paygatev1.BaseURLSandbox, ShortCode: "174379",
		CredentialsSecretRef: paygatev1.SecretReference{Namespace: "paygate-system", Name: "daraja"}}
}

// settlementNumbers is a spec.settlementNumbers list: currency, number, currency, number, ...
func settlementNumbers(pairs ...string) []paygatev1.CurrencySettlementNumber {
	var out []paygatev1.CurrencySettlementNumber
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, paygatev1.CurrencySettlementNumber{Currency: paygatev1.CurrencyCode(pairs[i]), Number: paygatev1.MobileNumber(pairs[i+1])})
	}
	return out
}
