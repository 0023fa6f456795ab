// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build dev

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/test/fakedaraja"
	"github.com/paygate/paygate/test/fakepawapay"
)

// The provider-backed demo gateways: a pawaPay gateway (TZS) and an M-Pesa Daraja gateway (KES),
// each carried by the fake of its provider's API that `paygate dev` runs in-process, and each
// sending the demo merchant's sandbox payments to that fake (spec.sandbox Provider) instead of the
// built-in simulator. mpesa-ke is already the simulator's M-Pesa Kenya, hence daraja-ke.
const (
	devPawapayGateway = "pawapay-tz"
	devDarajaGateway  = "daraja-ke"
	// devProviderNamespace holds the two gateways' credential Secrets, as the manager's namespace
	// would in a cluster (docs/providers.md).
	devProviderNamespace = "paygate-system"
	devPawapaySecret     = "pawapay-demo"
	devDarajaSecret      = "daraja-demo"
	// devProviderMerchant is the demo merchant whose gateway selection also offers the two.
	devProviderMerchant = "duka-online"
	// devPawapayProvider is the pawaPay provider (operator) code of the demo gateway.
	devPawapayProvider = "VODACOM_TZA"
	// The display names contain pawaPay and Daraja, so that allow_payment_methods picks them.
	devPawapayDisplayName = "Vodacom M-Pesa via pawaPay"
	devDarajaDisplayName  = "M-Pesa Kenya via Daraja"
)

// Where the apiserver receives provider callbacks, under its base URL.
const (
	devPawapayCallbackPath = "/internal/provider/callbacks/pawapay"
	devDarajaCallbackPath  = "/internal/provider/callbacks/daraja"
)

// devLocalURL is the base URL at which this machine reaches the apiserver bound to addr (the
// fakes post their callbacks there): a wildcard host becomes 127.0.0.1.
func devLocalURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// devProviderDemo is what the demo provider objects are made of: where each fake listens and the
// credentials it accepts.
type devProviderDemo struct {
	PawapayURL, PawapayToken string
	// PawapaySigned says the pawaPay fake signs its callbacks (spec.pawapay.signedCallbacks).
	PawapaySigned bool
	// PawapayCallbackURL is where the pawaPay fake posts deposit, payout and refund callbacks.
	PawapayCallbackURL string

	DarajaURL, DarajaShortCode                   string
	DarajaConsumerKey, DarajaConsumerSecret      string
	DarajaPasskey, DarajaCallbackSecret          string
	DarajaInitiatorName, DarajaInitiatorPassword string
	DarajaCertificatePEM                         []byte
	DarajaCallbackURL                            string // the manager's Daraja callback base URL
}

// devFakeNumbers are customer numbers whose payments the fakes fail, as the simulator's magic
// numbers ending in 000001 and 000003 do (docs/sandbox.md); every other valid number pays at once.
var devFakeNumbers = []struct {
	phone, reason  string
	pawapayFailure string                // pawaPay failureCode
	darajaResult   fakedaraja.ResultCode // M-Pesa Express ResultCode
}{
	{phone: "+255754000001", reason: "INSUFFICIENT_FUNDS", pawapayFailure: "INSUFFICIENT_BALANCE"},
	{phone: "+255754000003", reason: "CUSTOMER_CANCELLED", pawapayFailure: "PAYMENT_NOT_APPROVED"},
	{phone: "+254708000001", reason: "INSUFFICIENT_FUNDS", darajaResult: fakedaraja.ResultInsufficientFunds},
	{phone: "+254708000003", reason: "CUSTOMER_CANCELLED", darajaResult: fakedaraja.ResultCancelledByUser},
}

// devFakes are the pawaPay and Daraja fakes of test/ running in this process.
type devFakes struct {
	Pawapay *fakepawapay.Server
	Daraja  *fakedaraja.Server
	Demo    devProviderDemo
	tb      *devTB
}

// startDevFakes starts the pawaPay fake (its callbacks to pawapayCallbackURL, unsigned) and the
// Daraja fake (results go to the URLs in each request: the manager's Daraja callback URL), each
// on a loopback port of its own, with their documented sandbox behaviour: the pawaPay fake's
// providers and test numbers (DefaultProviders, DefaultSandboxNumbers), the Daraja fake's sandbox
// shortcode, passkey and initiator. Close stops them.
func startDevFakes(log logr.Logger, pawapayCallbackURL, darajaCallbackURL string) (f *devFakes, err error) {
	tb := &devTB{log: log}
	defer func() {
		if r := recover(); r != nil {
			fatal, ok := r.(devFatal)
			if !ok {
				panic(r)
			}
			tb.close()
			f, err = nil, fmt.Errorf("starting the provider fakes: %s", string(fatal))
		}
	}()
	// Unsigned callbacks keep the demo simple; the gateway's signedCallbacks follows this.
	const signCallbacks = false
	pp := fakepawapay.New(tb, fakepawapay.Options{
		DepositCallbackURL: pawapayCallbackURL, PayoutCallbackURL: pawapayCallbackURL, RefundCallbackURL: pawapayCallbackURL,
		SignCallbacks: signCallbacks, CompanyName: "Paygate demo (local pawaPay fake)",
	})
	dj := fakedaraja.New(tb, fakedaraja.Options{})
	for _, n := range devFakeNumbers {
		if n.pawapayFailure != "" {
			pp.Script(strings.TrimPrefix(n.phone, "+"), fakepawapay.Scenario{Status: fakepawapay.StatusFailed, FailureCode: n.pawapayFailure})
		}
		if n.darajaResult != "" {
			dj.ScriptPhone(strings.TrimPrefix(n.phone, "+"), fakedaraja.STKScript{Result: n.darajaResult})
		}
	}
	callbackSecret := make([]byte, 32)
	if _, err := rand.Read(callbackSecret); err != nil {
		tb.close()
		return nil, fmt.Errorf("making the Daraja callback secret: %w", err)
	}
	return &devFakes{Pawapay: pp, Daraja: dj, tb: tb, Demo: devProviderDemo{
		PawapayURL: pp.URL(), PawapayToken: pp.Token, PawapaySigned: signCallbacks, PawapayCallbackURL: pawapayCallbackURL,
		DarajaURL: dj.URL(), DarajaShortCode: dj.ShortCode(),
		DarajaConsumerKey: dj.ConsumerKey(), DarajaConsumerSecret: dj.ConsumerSecret(),
		DarajaPasskey: dj.Passkey(), DarajaCallbackSecret: hex.EncodeToString(callbackSecret),
		DarajaInitiatorName: dj.InitiatorName(), DarajaInitiatorPassword: dj.InitiatorPassword(),
		DarajaCertificatePEM: dj.CertificatePEM(), DarajaCallbackURL: darajaCallbackURL,
	}}, nil
}

// Close stops both fakes and their callback goroutines.
func (f *devFakes) Close() { f.tb.close() }

// devProviderObjects are the demo's provider objects: the namespace of the credentials, the two
// labelled Secrets, and the two gateways, both serving sandbox payments through their fake
// (sandbox: Provider). Their base URLs are the fakes' loopback URLs, which Paygate treats like a
// production URL (docs/providers.md): production payments through these gateways go to the fakes
// too, and no money moves either way.
func devProviderObjects(d devProviderDemo) []client.Object {
	pawapay := &paygatev1.Gateway{
		TypeMeta:   metav1.TypeMeta{APIVersion: paygatev1.GroupVersion.String(), Kind: "Gateway"},
		ObjectMeta: metav1.ObjectMeta{Name: devPawapayGateway},
		Spec: paygatev1.GatewaySpec{
			DisplayName: devPawapayDisplayName, Currency: "TZS", Type: paygatev1.GatewayTypeAutomatic,
			Fees:      paygatev1.GatewayFees{Percent: "2.5", Fixed: "0"},
			MinAmount: ptrDecimal("1000"), MaxAmount: ptrDecimal("5000000"),
			Provider: paygatev1.ProviderPawapay, Sandbox: paygatev1.SandboxProvider,
			Pawapay: &paygatev1.PawapayConfig{BaseURL: d.PawapayURL, Provider: devPawapayProvider, Country: "TZA",
				CredentialsSecretRef: paygatev1.PawapayCredentialsReference{Namespace: devProviderNamespace, Name: devPawapaySecret, Key: provider.PawapaySecretToken},
				SignedCallbacks:      d.PawapaySigned},
		},
	}
	daraja := &paygatev1.Gateway{
		TypeMeta:   metav1.TypeMeta{APIVersion: paygatev1.GroupVersion.String(), Kind: "Gateway"},
		ObjectMeta: metav1.ObjectMeta{Name: devDarajaGateway},
		Spec: paygatev1.GatewaySpec{
			DisplayName: devDarajaDisplayName, Currency: "KES", Type: paygatev1.GatewayTypeAutomatic,
			Fees:      paygatev1.GatewayFees{Percent: "1.5", Fixed: "5"},
			MinAmount: ptrDecimal("10"), MaxAmount: ptrDecimal("250000"),
			Provider: paygatev1.ProviderDaraja, Sandbox: paygatev1.SandboxProvider,
			Daraja: &paygatev1.DarajaConfig{BaseURL: d.DarajaURL, ShortCode: d.DarajaShortCode,
				TransactionType:      paygatev1.DarajaTransactionType(provider.DarajaPayBill),
				CredentialsSecretRef: paygatev1.SecretReference{Namespace: devProviderNamespace, Name: devDarajaSecret}},
		},
	}
	secret := func(name, kind string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: devProviderNamespace, Name: name,
				Labels: map[string]string{paygatev1.LabelCredential: kind}},
			Type: corev1.SecretTypeOpaque,
			Data: data,
		}
	}
	return []client.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: devProviderNamespace}},
		secret(devPawapaySecret, provider.CredentialKindPawapay, map[string][]byte{provider.PawapaySecretToken: []byte(d.PawapayToken)}),
		secret(devDarajaSecret, provider.CredentialKindDaraja, map[string][]byte{
			provider.DarajaSecretConsumerKey: []byte(d.DarajaConsumerKey), provider.DarajaSecretConsumerSecret: []byte(d.DarajaConsumerSecret),
			provider.DarajaSecretPasskey: []byte(d.DarajaPasskey), provider.DarajaSecretCallbackSecret: []byte(d.DarajaCallbackSecret),
			// The initiator and the fake's own certificate: B2C, Transaction Status and the other
			// initiator calls encrypt the password with it.
			provider.DarajaSecretInitiatorName: []byte(d.DarajaInitiatorName), provider.DarajaSecretInitiatorPassword: []byte(d.DarajaInitiatorPassword),
			provider.DarajaSecretCertificate: d.DarajaCertificatePEM,
		}),
		pawapay,
		daraja,
	}
}

func ptrDecimal(s string) *paygatev1.Decimal {
	d := paygatev1.Decimal(s)
	return &d
}

// applyProviderDemo applies the demo provider objects (server-side, as the samples are: a restart
// points the gateways at the new fakes' ports and rewrites the Secrets), then adds the two
// gateways to the demo merchant's gateway selection, after the selection's own gateways so that the
// demo's default TZS and KES gateways stay first.
func applyProviderDemo(ctx context.Context, c client.Client, d devProviderDemo) error {
	for _, obj := range devProviderObjects(d) {
		u, err := applyUnstructured(obj)
		if err != nil {
			return err
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("paygate-dev"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return extendDemoSelection(ctx, c, devNamespace, devProviderMerchant, devPawapayGateway, devDarajaGateway)
}

// applyUnstructured turns a typed object into the body of a server-side apply: no status, no
// empty creationTimestamp.
func applyUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s: %w", obj.GetName(), err)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// extendDemoSelection appends codes (those it lacks) to the gateway selections of merchant.
// Without a selection the merchant already sees every gateway, and nothing is changed.
func extendDemoSelection(ctx context.Context, c client.Client, namespace, merchant string, codes ...paygatev1.GatewayCode) error {
	var list paygatev1.GatewaySelectionList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing the demo gateway selections: %w", err)
	}
	for _, sel := range list.Items {
		if sel.Spec.MerchantRef.Name != merchant {
			continue
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cur paygatev1.GatewaySelection
			if err := c.Get(ctx, client.ObjectKeyFromObject(&sel), &cur); err != nil {
				return err
			}
			changed := false
			for _, code := range codes {
				if !slices.Contains(cur.Spec.Gateways, code) {
					cur.Spec.Gateways = append(cur.Spec.Gateways, code)
					changed = true
				}
			}
			if !changed {
				return nil
			}
			return c.Update(ctx, &cur, client.FieldOwner("paygate-dev"))
		})
		if err != nil {
			return fmt.Errorf("adding the provider gateways to GatewaySelection %s: %w", sel.Name, err)
		}
	}
	return nil
}

// providerGatewayState is a provider-backed demo gateway as the gateway controller found it.
type providerGatewayState struct {
	Name    string
	Ready   bool
	Message string // the ProviderReady condition's reason and message when not Ready
}

// waitForProviderGateways waits until each named gateway's ProviderReady condition is True for
// its current generation, at most timeout; it reports each gateway's state either way.
func waitForProviderGateways(ctx context.Context, c client.Client, timeout time.Duration, names ...string) ([]providerGatewayState, error) {
	deadline := time.Now().Add(timeout)
	for {
		states := make([]providerGatewayState, 0, len(names))
		all := true
		for _, name := range names {
			var gw paygatev1.Gateway
			st := providerGatewayState{Name: name}
			switch err := c.Get(ctx, client.ObjectKey{Name: name}, &gw); {
			case client.IgnoreNotFound(err) != nil:
				return nil, fmt.Errorf("reading gateway %s: %w", name, err)
			case err != nil:
				st.Message = "not found"
			case gw.ProviderReady():
				st.Ready = true
			default:
				st.Message = "ProviderReady not reported yet"
				if cond := meta.FindStatusCondition(gw.Status.Conditions, paygatev1.ConditionProviderReady); cond != nil {
					st.Message = cond.Reason + ": " + cond.Message
				}
			}
			all = all && st.Ready
			states = append(states, st)
		}
		if all || time.Now().After(deadline) {
			return states, nil
		}
		select {
		case <-ctx.Done():
			return states, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// printProviderGateways says where the fakes listen, which gateways they carry, and how to try
// them.
func printProviderGateways(d devProviderDemo, states []providerGatewayState) {
	state := func(name string) string {
		for _, s := range states {
			if s.Name == name {
				if s.Ready {
					return "ProviderReady"
				}
				return "not ProviderReady yet (" + s.Message + ")"
			}
		}
		return "unknown"
	}
	fmt.Printf(`
Provider-backed demo gateways: their sandbox payments go to in-process fakes of the providers'
APIs (test/fakepawapay, test/fakedaraja) instead of the simulator. No money moves.
  %-11s TZS  pawaPay Merchant API v2 fake at %s (provider %s): %s
  %-11s KES  M-Pesa Daraja fake at %s (shortcode %s): %s
  Callbacks go to %s and under %s.
  A loopback base URL counts as production: duka-online's production payments may use them too.
Try them (allow_payment_methods picks the gateway; every valid number pays at once, but
%s):
  hack/paygate-curl.sh POST /api/v1/payments '{"payment_amount":2000,"currency_code":"TZS","ref_trx":"pawapay-1","payment_mode":"push","customer_phone":"+255754000601","allow_payment_methods":["pawapay"]}'
  hack/paygate-curl.sh POST /api/v1/payments '{"payment_amount":150,"currency_code":"KES","ref_trx":"daraja-1","payment_mode":"push","customer_phone":"+254708374149","allow_payment_methods":["daraja"]}'
  bin/paygate provider check %s      (with KUBECONFIG set)
Hosted checkout offers them as %q and %q.
`, devPawapayGateway, d.PawapayURL, devPawapayProvider, state(devPawapayGateway),
		devDarajaGateway, d.DarajaURL, d.DarajaShortCode, state(devDarajaGateway),
		d.PawapayCallbackURL, d.DarajaCallbackURL, devFakeNumberList(), devPawapayGateway,
		devPawapayDisplayName, devDarajaDisplayName)
}

// devFatal is the panic of devTB.Fatalf.
type devFatal string

// devTB is the testing.TB the fakes of test/ take, for a process that is not a test: Cleanup
// registers what close runs; Errorf and Logf log; Fatalf, which the fakes call only when they
// cannot start or are misused, panics with a devFatal (startDevFakes turns it into an error).
// The embedded nil TB makes any other method, which the fakes do not call, panic.
type devTB struct {
	testing.TB
	log logr.Logger

	mu       sync.Mutex
	cleanups []func()
	closed   bool
}

func (t *devTB) Helper()      {}
func (t *devTB) Name() string { return "paygate-dev" }

func (t *devTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *devTB) Logf(format string, args ...any) { t.log.Info(fmt.Sprintf(format, args...)) }
func (t *devTB) Log(args ...any)                 { t.log.Info(fmt.Sprint(args...)) }

func (t *devTB) Errorf(format string, args ...any) {
	t.log.Error(errors.New(fmt.Sprintf(format, args...)), "Provider fake")
}

func (t *devTB) Error(args ...any) { t.log.Error(errors.New(fmt.Sprint(args...)), "Provider fake") }

func (t *devTB) Fatalf(format string, args ...any) { panic(devFatal(fmt.Sprintf(format, args...))) }
func (t *devTB) Fatal(args ...any)                 { panic(devFatal(fmt.Sprint(args...))) }

// close runs the registered cleanups, last first, once.
func (t *devTB) close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	fns := t.cleanups
	t.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

// devFakeNumberList says which numbers of devFakeNumbers fail, and how.
func devFakeNumberList() string {
	var reasons []string
	phones := map[string][]string{}
	for _, n := range devFakeNumbers {
		if _, ok := phones[n.reason]; !ok {
			reasons = append(reasons, n.reason)
		}
		phones[n.reason] = append(phones[n.reason], n.phone)
	}
	parts := make([]string, 0, len(reasons))
	for _, r := range reasons {
		parts = append(parts, strings.Join(phones[r], " and ")+" fail with "+r)
	}
	return strings.Join(parts, "; ")
}
