// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/openapitest"
	"github.com/paygate/paygate/pkg/paygate"
)

// refundFixture is the payout fixture (duka KYB approved, 9750.00 TZS available in sandbox) with
// a fake clock the clients sign with, and the settled payment (1500.00 TZS) collected through
// tz-mpesa (the simulator: any refund) by a push to +255754000111, with a receipt.
type refundFixture struct {
	*exchangeFixture
	clock *testingclock.FakeClock
}

func newRefundFixture(t *testing.T, mods ...func(*Options)) *refundFixture {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	f := &refundFixture{clock: clk}
	f.exchangeFixture = payoutFixture(t, append([]func(*Options){func(o *Options) {
		o.Clock = clk
		o.RateLimitPerMinute = 1_000_000
	}}, mods...)...)
	f.collect(t, f.settledTrxID, "tz-mpesa")
	return f
}

// collect gives the payment trxID the succeeded push attempt through gateway that a settled
// payment has: its push request to +255754000111, the provider's id and its receipt.
func (f *refundFixture) collect(t *testing.T, trxID string, gateway paygatev1.GatewayCode) {
	t.Helper()
	p := &paygatev1.Payment{}
	if err := f.k8s.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: trxID}, p); err != nil {
		t.Fatal(err)
	}
	ref := "shop." + trxID + ".1"
	now := metav1.NewMicroTime(f.clock.Now().Add(-time.Hour))
	p.Spec.PushRequest = &paygatev1.PushRequest{Sequence: 1, Phone: "+255754000111", RequestedAt: now}
	p.Status.Gateway = gateway
	p.Status.Attempts = []paygatev1.PushAttempt{{Sequence: 1, Reference: ref, Gateway: gateway, Phase: paygatev1.AttemptSucceeded,
		ProviderReference: "dep-" + trxID[4:10], StartedAt: now, FinishedAt: &now}}
	p.Annotations = map[string]string{paygatev1.AnnotationProviderReceipt: ref + " QK12AB34CD"}
	if err := f.k8s.Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
}

// payment records a payment of duka's (or of merchant's in env) in phase, collected through
// gateway when it succeeded.
func (f *refundFixture) payment(t *testing.T, merchant string, env paygatev1.Environment, ref, amount string, phase paygatev1.PaymentPhase, gateway paygatev1.GatewayCode) string {
	t.Helper()
	trxID := TrxID("uid-"+merchant, env, ref)
	p := &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: trxID, CreationTimestamp: metav1.NewTime(f.clock.Now().Add(-2 * time.Hour)),
			Labels: map[string]string{paygatev1.LabelMerchant: merchant, paygatev1.LabelEnvironment: string(env)}},
		Spec: paygatev1.PaymentSpec{
			MerchantRef: paygatev1.MerchantReference{Name: merchant}, Environment: env,
			MerchantReference: ref, Amount: paygatev1.Decimal(amount), Currency: "TZS", Mode: paygatev1.PaymentModePush,
			Customer: paygatev1.Customer{Name: "Asha", Phone: "+255712345678"}, ExpiresAt: metav1.NewTime(f.clock.Now().Add(-time.Hour)),
		},
		Status: paygatev1.PaymentStatus{Phase: phase},
	}
	if phase == paygatev1.PaymentSuccess {
		p.Status.Fee, p.Status.NetAmount = "0.00", paygatev1.Decimal(amount)
	}
	if err := f.k8s.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if phase == paygatev1.PaymentSuccess {
		f.collect(t, trxID, gateway)
	}
	return trxID
}

// gateway adds a TZS gateway of provider, its sandbox payments sent to the provider (so that its
// own refund rules apply in sandbox too).
func (f *refundFixture) gateway(t *testing.T, name string, kind paygatev1.ProviderKind) paygatev1.GatewayCode {
	t.Helper()
	gw := &paygatev1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: paygatev1.GatewaySpec{DisplayName: name, Currency: "TZS", Type: paygatev1.GatewayTypeAutomatic,
			Provider: kind, Sandbox: paygatev1.SandboxProvider},
	}
	if err := f.k8s.Create(t.Context(), gw); err != nil {
		t.Fatal(err)
	}
	return gw.Code()
}

// client is a Go client for creds signing with the fixture's clock; its exchanges are validated
// against the OpenAPI document (requests too when strict).
func (f *refundFixture) as(t *testing.T, creds paygate.Credentials, strict bool) *paygate.Client {
	v := openapitest.NewValidator(t, openAPIDocument, nil)
	if strict {
		v = v.StrictRequests()
	}
	c := f.client(v, creds)
	c.Now = f.clock.Now
	c.MaxRetries = -1
	return c
}

func (f *refundFixture) refunds(t *testing.T) []paygatev1.Refund {
	t.Helper()
	var list paygatev1.RefundList
	if err := f.k8s.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func (f *refundFixture) stored(t *testing.T, id string) *paygatev1.Refund {
	t.Helper()
	rf := &paygatev1.Refund{}
	if err := f.k8s.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: id}, rf); err != nil {
		t.Fatal(err)
	}
	return rf
}

// setPhase writes what the refund controllers would: the refund's phase (and its reason).
func (f *refundFixture) setPhase(t *testing.T, id string, phase paygatev1.RefundPhase, reason string) {
	t.Helper()
	rf := f.stored(t, id)
	now := metav1.NewMicroTime(f.clock.Now().Add(time.Second))
	rf.Status.Phase, rf.Status.Reason, rf.Status.UpdatedAt = phase, reason, &now
	if phase != paygatev1.RefundPending && phase != paygatev1.RefundFailed {
		rf.Status.ReservedAt = &now
	}
	if err := f.k8s.Update(t.Context(), rf); err != nil {
		t.Fatal(err)
	}
}

// TestRefundCreate: a partial refund, a replay, a key reused with another body, the default
// amount (all that is left), and a full refund of another payment; each record as the document
// describes it, each Refund as the controllers need it.
func TestRefundCreate(t *testing.T) {
	f := newRefundFixture(t)
	ctx := t.Context()
	c := f.as(t, f.duka, true)

	partial, err := c.CreateRefund(ctx, f.settledTrxID, paygate.RefundRequest{Amount: "500", Reason: "Out of stock"}, "refund-1")
	if err != nil {
		t.Fatalf("partial refund: %v", err)
	}
	created := formatTime(f.clock.Now())
	want := paygate.Refund{ID: partial.ID, Status: "pending", Remark: "SANDBOX_TRANSACTION", Amount: "500.00", Currency: "TZS",
		TrxID: f.settledTrxID, Environment: "sandbox", CreatedAt: created, UpdatedAt: created}
	if *partial != want {
		t.Errorf("partial refund: %+v, want %+v", *partial, want)
	}
	if !payoutIDPattern.MatchString(partial.ID) {
		t.Errorf("refund id %q is not a UUID", partial.ID)
	}
	rf := f.stored(t, partial.ID)
	ref := "shop." + f.settledTrxID + ".1"
	wantSpec := paygatev1.RefundSpec{
		MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
		Payment: paygatev1.RefundedPayment{TrxID: f.settledTrxID, Amount: "1500.00", AttemptReference: ref,
			ProviderReference: "dep-" + f.settledTrxID[4:10], Receipt: "QK12AB34CD"},
		Amount: "500.00", Currency: "TZS", Destination: "+255754000111", Gateway: "tz-mpesa", Reason: "Out of stock",
		CreatedAt: metav1.NewMicroTime(f.clock.Now()),
	}
	if !rf.Spec.CreatedAt.Equal(&wantSpec.CreatedAt) {
		t.Errorf("createdAt %v, want %v", rf.Spec.CreatedAt, wantSpec.CreatedAt)
	}
	rf.Spec.CreatedAt = wantSpec.CreatedAt
	if rf.Spec != wantSpec {
		t.Errorf("spec %+v, want %+v", rf.Spec, wantSpec)
	}
	wantLabels := map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox", paygatev1.LabelPayment: f.settledTrxID}
	for k, v := range wantLabels {
		if rf.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, rf.Labels[k], v, rf.Labels)
		}
	}
	if len(rf.OwnerReferences) != 0 || rf.Annotations[annotationIdempotencyKey] == "" {
		t.Errorf("owners %v, annotations %v: want no owner and the idempotency key", rf.OwnerReferences, rf.Annotations)
	}

	// The same key and body: the stored answer, the same refund.
	f.clock.Step(time.Second)
	resp, err := c.Do(ctx, http.MethodPost, "/api/v1/payments/"+f.settledTrxID+"/refunds", paygate.RefundRequest{Amount: "500", Reason: "Out of stock"},
		http.Header{"Idempotency-Key": {"refund-1"}})
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Idempotent-Replayed") != "true" || !strings.Contains(string(resp.Body), partial.ID) {
		t.Errorf("replay: %v %+v", err, resp)
	}
	// The same key, another body.
	_, err = f.as(t, f.duka, false).CreateRefund(ctx, f.settledTrxID, paygate.RefundRequest{Amount: "400"}, "refund-1")
	expectRefusal(t, "a reused key", err, 409, LabelIdempotencyKeyReused, "")

	// No amount: everything not refunded yet, the pending refund counted.
	rest, err := c.CreateRefund(ctx, f.settledTrxID, paygate.RefundRequest{}, "refund-2")
	if err != nil {
		t.Fatalf("default amount: %v", err)
	}
	if rest.Amount != "1000.00" || rest.ID == partial.ID {
		t.Errorf("default amount: %+v, want 1000.00 (1500.00 less the pending 500.00)", rest)
	}
	if rf := f.stored(t, rest.ID); rf.Spec.Reason != "" || rf.Spec.Amount != "1000.00" {
		t.Errorf("default amount stored %+v", rf.Spec)
	}

	// A full refund of another payment, its amount given.
	other := f.payment(t, "duka", paygatev1.EnvironmentSandbox, "order-full", "2500.50", paygatev1.PaymentSuccess, "tz-mpesa")
	full, err := c.CreateRefund(ctx, other, paygate.RefundRequest{Amount: "2500.50"}, "")
	if err != nil || full.Amount != "2500.50" || full.TrxID != other {
		t.Fatalf("full refund: %+v, %v", full, err)
	}
	if n := len(f.refunds(t)); n != 3 {
		t.Errorf("%d refunds, want 3", n)
	}
	if got, err := c.GetRefund(ctx, full.ID); err != nil || *got != *full {
		t.Errorf("get: %+v, %v; want %+v", got, err, full)
	}
}

// expectRefusal checks that err is the API error status with label and, when field is set, a
// message for that field.
func expectRefusal(t *testing.T, what string, err error, status int, label, field string) {
	t.Helper()
	e, ok := err.(*paygate.Error)
	if !ok {
		t.Errorf("%s: %v, want %d %s", what, err, status, label)
		return
	}
	if e.StatusCode != status || e.Label != label {
		t.Errorf("%s: %d %s (%s), want %d %s", what, e.StatusCode, e.Label, e.Message, status, label)
	}
	if field != "" && len(e.Errors[field]) == 0 {
		t.Errorf("%s: no errors.%s in %+v", what, field, e.Errors)
	}
}

// TestRefundRefusals: every refusal in the order documented, each leaving no Refund behind.
func TestRefundRefusals(t *testing.T) {
	f := newRefundFixture(t)
	ctx := t.Context()
	daraja := f.gateway(t, "tz-daraja", paygatev1.ProviderDaraja)
	reversal := f.payment(t, "duka", paygatev1.EnvironmentSandbox, "order-daraja", "1000.00", paygatev1.PaymentSuccess, daraja)
	reversed := f.payment(t, "duka", paygatev1.EnvironmentSandbox, "order-reversed", "1000.00", paygatev1.PaymentSuccess, daraja)
	uncollected := f.payment(t, "duka", paygatev1.EnvironmentSandbox, "order-manual", "1000.00", paygatev1.PaymentSuccess, "tz-mpesa")
	p := &paygatev1.Payment{}
	if err := f.k8s.Get(ctx, client.ObjectKey{Namespace: "shop", Name: uncollected}, p); err != nil {
		t.Fatal(err)
	}
	p.Status.Attempts = nil
	if err := f.k8s.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	gone := f.payment(t, "duka", paygatev1.EnvironmentSandbox, "order-gone", "1000.00", paygatev1.PaymentSuccess, "tz-retired")
	pending := f.payment(t, "duka", paygatev1.EnvironmentSandbox, "order-pending", "1000.00", paygatev1.PaymentPending, "")
	failed := f.payment(t, "duka", paygatev1.EnvironmentSandbox, "order-failed", "1000.00", paygatev1.PaymentFailed, "")
	// A production payment through a gateway of a provider that cannot refund.
	acme := f.gateway(t, "tz-acme", "acme")
	live := f.payment(t, "live", paygatev1.EnvironmentProduction, "order-live", "1000.00", paygatev1.PaymentSuccess, acme)

	c := f.as(t, f.duka, true)
	// Refunds made before the refusals: 1000.00 of the settled payment's 1500.00 pending, 300.00
	// failed (not counted); the whole of a Daraja payment.
	first, err := c.CreateRefund(ctx, f.settledTrxID, paygate.RefundRequest{Amount: "1000"}, "")
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Step(time.Second)
	lost, err := c.CreateRefund(ctx, f.settledTrxID, paygate.RefundRequest{Amount: "300"}, "")
	if err != nil {
		t.Fatal(err)
	}
	f.setPhase(t, lost.ID, paygatev1.RefundFailed, string(paygatev1.RefundInsufficientBalance))
	if _, err := c.CreateRefund(ctx, reversed, paygate.RefundRequest{}, ""); err != nil {
		t.Fatalf("a whole Daraja payment: %v", err)
	}
	before := len(f.refunds(t))

	bad := f.as(t, f.duka, false)
	post := func(creds paygate.Credentials, trxID, body string) error {
		t.Helper()
		f.clock.Step(time.Second) // a new signature each time: the same body is not a replay
		resp, err := f.as(t, creds, false).Do(ctx, http.MethodPost, "/api/v1/payments/"+trxID+"/refunds", []byte(body), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		e := &paygate.Error{StatusCode: resp.StatusCode}
		if err := json.Unmarshal(resp.Body, e); err != nil {
			t.Fatalf("%s: %s", err, resp.Body)
		}
		return e
	}
	for _, tc := range []struct {
		name          string
		creds         paygate.Credentials
		trxID, body   string
		status        int
		label, field  string
		messageSubstr string
	}{
		{"another merchant's payment", f.slow, f.settledTrxID, `{}`, 404, LabelNotFound, "", "Transaction not found."},
		{"the other environment's payment", f.duka, live, `{}`, 404, LabelNotFound, "", ""},
		{"an unknown payment", f.duka, TrxID("uid-duka", paygatev1.EnvironmentSandbox, "order-none"), `{}`, 404, LabelNotFound, "", ""},
		{"not a trx_id", f.duka, "trx-1", `{}`, 404, LabelNotFound, "", ""},
		{"a pending payment", f.duka, pending, `{}`, 409, LabelPaymentNotRefundable, "", "The payment is pending; only a successful payment can be refunded."},
		{"a failed payment", f.duka, failed, `{"amount":10}`, 409, LabelPaymentNotRefundable, "", "The payment is failed"},
		{"a zero amount", f.duka, f.settledTrxID, `{"amount":0}`, 422, LabelValidationFailed, "amount", "The amount must be a positive decimal number."},
		{"a negative amount", f.duka, f.settledTrxID, `{"amount":-5}`, 422, LabelValidationFailed, "amount", ""},
		{"a malformed amount", f.duka, f.settledTrxID, `{"amount":"5 TZS"}`, 422, LabelValidationFailed, "amount", ""},
		{"an amount that is not a number", f.duka, f.settledTrxID, `{"amount":true}`, 422, LabelValidationFailed, "amount", ""},
		{"too many decimals", f.duka, f.settledTrxID, `{"amount":10.001}`, 422, LabelValidationFailed, "amount", "The amount has too many decimal places for TZS."},
		{"a reason too long", f.duka, f.settledTrxID, `{"amount":10,"reason":"` + strings.Repeat("é", 256) + `"}`, 422, LabelValidationFailed, "reason", "The reason must be at most 255 characters."},
		{"a reason that is not a string", f.duka, f.settledTrxID, `{"reason":5}`, 422, LabelValidationFailed, "reason", ""},
		{"a body that is not an object", f.duka, f.settledTrxID, `[1]`, 422, LabelValidationFailed, "body", ""},
		{"more than is left, a pending refund counted", f.duka, f.settledTrxID, `{"amount":500.01}`, 422, LabelValidationFailed, "amount",
			"The amount is more than what is left to refund of this payment (500.00 TZS)."},
		{"more than the payment", f.duka, f.settledTrxID, `{"amount":"1500.01"}`, 422, LabelValidationFailed, "amount", ""},
		{"part of a Daraja payment", f.duka, reversal, `{"amount":999.99}`, 422, LabelRefundNotSupported, "amount",
			"The payment's gateway refunds only the whole payment (1000.00 TZS); a partial refund is not possible."},
		{"a second refund of a Daraja payment", f.duka, reversed, `{"amount":1000}`, 422, LabelRefundNotSupported, "",
			"The payment's gateway refunds a whole payment once only, and this payment already has a refund"},
		{"a second default refund of a Daraja payment", f.duka, reversed, `{}`, 422, LabelRefundNotSupported, "", ""},
		{"a payment no provider collected", f.duka, uncollected, `{}`, 422, LabelRefundNotSupported, "", ""},
		{"a gateway that is gone", f.duka, gone, `{}`, 422, LabelRefundNotSupported, "", "The payment's gateway tz-retired no longer exists"},
		{"a gateway that cannot refund", f.live, live, `{}`, 422, LabelRefundNotSupported, "", "The payment's gateway tz-acme cannot refund payments."},
	} {
		err := post(tc.creds, tc.trxID, tc.body)
		expectRefusal(t, tc.name, err, tc.status, tc.label, tc.field)
		if e, ok := err.(*paygate.Error); ok && !strings.Contains(e.Message, tc.messageSubstr) {
			t.Errorf("%s: message %q, want it to contain %q", tc.name, e.Message, tc.messageSubstr)
		}
	}

	// The balance the cache shows must cover the refund.
	f.setAvailable(t, "499.99")
	_, err = bad.CreateRefund(ctx, f.settledTrxID, paygate.RefundRequest{Amount: "500"}, "")
	expectRefusal(t, "above the available balance", err, 422, LabelInsufficientBalance, "amount")

	// The gates of payouts: KYB review, then business approval.
	f.updateDuka(t, func(m *paygatev1.Merchant) { m.Spec.KYBStatus = paygatev1.KYBPending })
	err = post(f.duka, f.settledTrxID, `{"amount":1}`)
	expectRefusal(t, "KYB not approved", err, 403, LabelRefundRejected, "")
	if e, ok := err.(*paygate.Error); ok && e.Message != "Refunds need an approved KYB review; this business's KYB status is pending." {
		t.Errorf("KYB gate message %q", e.Message)
	}
	if n := len(f.refunds(t)); n != before {
		t.Errorf("%d refunds after the refusals, want %d", n, before)
	}

	// A failed refund no longer counts: 500.00 is left, and refunding it all is allowed.
	f.updateDuka(t, func(m *paygatev1.Merchant) { m.Spec.KYBStatus = paygatev1.KYBApproved })
	f.setAvailable(t, "9750.00")
	if got, err := c.CreateRefund(ctx, f.settledTrxID, paygate.RefundRequest{}, "the-rest"); err != nil || got.Amount != "500.00" {
		t.Errorf("the rest after a failed refund: %+v, %v", got, err)
	}
	// Nothing left now: processing and successful refunds count as pending ones do.
	f.setPhase(t, first.ID, paygatev1.RefundSuccess, "")
	err = post(f.duka, f.settledTrxID, `{}`)
	expectRefusal(t, "nothing left", err, 422, LabelValidationFailed, "amount")
	if e, ok := err.(*paygate.Error); ok && e.Errors["amount"][0] != "Nothing is left to refund: the payment's refunds already return all of it." {
		t.Errorf("nothing left: %q", e.Errors["amount"])
	}
}

// TestRefundIdempotencyKeyOnRefusal: a refusal is kept for the key like a payout's, but a
// payment that is not found leaves no key behind.
func TestRefundIdempotencyKeyOnRefusal(t *testing.T) {
	f := newRefundFixture(t)
	ctx := t.Context()
	c := f.as(t, f.duka, false)
	keys := func() int {
		var list paygatev1.IdempotencyKeyList
		if err := f.k8s.List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	_, err := c.CreateRefund(ctx, TrxID("uid-duka", paygatev1.EnvironmentSandbox, "order-none"), paygate.RefundRequest{}, "k-404")
	expectRefusal(t, "an unknown payment", err, 404, LabelNotFound, "")
	if n := keys(); n != 0 {
		t.Errorf("%d idempotency keys after a 404, want 0", n)
	}
	_, err = c.CreateRefund(ctx, f.settledTrxID, paygate.RefundRequest{Amount: "1500.01"}, "k-422")
	expectRefusal(t, "too much", err, 422, LabelValidationFailed, "amount")
	if n := keys(); n != 1 {
		t.Errorf("%d idempotency keys after a 422, want 1", n)
	}
	// The refusal replays.
	resp, err := c.Do(ctx, http.MethodPost, "/api/v1/payments/"+f.settledTrxID+"/refunds", paygate.RefundRequest{Amount: "1500.01"},
		http.Header{"Idempotency-Key": {"k-422"}})
	if err != nil || resp.StatusCode != 422 || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replayed refusal: %v %+v", err, resp)
	}
}

// TestRefundRetryWhileTheFirstIsInFlight: a retry with the key of a refund created but not yet
// answered (its record lost) finds the refund counted against the payment; it answers with the
// refund, never a refusal.
func TestRefundRetryWhileTheFirstIsInFlight(t *testing.T) {
	f := newRefundFixture(t)
	ctx := t.Context()
	c := f.as(t, f.duka, true)
	first, err := c.CreateRefund(ctx, f.settledTrxID, paygate.RefundRequest{}, "burst")
	if err != nil {
		t.Fatal(err)
	}
	var keys paygatev1.IdempotencyKeyList
	if err := f.k8s.List(ctx, &keys); err != nil || len(keys.Items) != 1 {
		t.Fatalf("idempotency keys: %d, %v", len(keys.Items), err)
	}
	keys.Items[0].Spec.Response = nil
	if err := f.k8s.Update(ctx, &keys.Items[0]); err != nil {
		t.Fatal(err)
	}
	again, err := c.CreateRefund(ctx, f.settledTrxID, paygate.RefundRequest{}, "burst")
	if err != nil || again.ID != first.ID {
		t.Errorf("the retry: %+v, %v; the first %s", again, err, first.ID)
	}
	if n := len(f.refunds(t)); n != 1 {
		t.Errorf("%d refunds, want 1", n)
	}
}

// archivedPayment is an archive holding one payment (what a refund of an archived payment reads).
type archivedPayment struct {
	Archive
	p *paygatev1.Payment
}

func (a archivedPayment) GetPayment(_ context.Context, namespace, name string) (*paygatev1.Payment, error) {
	if a.p.Namespace != namespace || a.p.Name != name {
		return nil, archive.ErrNotFound
	}
	return a.p.DeepCopy(), nil
}

func (a archivedPayment) GetRefund(context.Context, string, string) (*paygatev1.Refund, error) {
	return nil, archive.ErrNotFound
}

func (a archivedPayment) RefundsOfPayments(context.Context, string, []string) (map[string][]paygatev1.Refund, error) {
	return map[string][]paygatev1.Refund{}, nil
}

// TestRefundOfAnArchivedPayment: a settled payment moved to the archive is refunded as a live one.
func TestRefundOfAnArchivedPayment(t *testing.T) {
	var arch archivedPayment
	f := newRefundFixture(t, func(o *Options) { o.Archive = &arch })
	ctx := t.Context()
	arch.p = &paygatev1.Payment{}
	if err := f.k8s.Get(ctx, client.ObjectKey{Namespace: "shop", Name: f.settledTrxID}, arch.p); err != nil {
		t.Fatal(err)
	}
	if err := f.k8s.Delete(ctx, arch.p.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	c := f.as(t, f.duka, true)
	rf, err := c.CreateRefund(ctx, f.settledTrxID, paygate.RefundRequest{Amount: "100"}, "archived")
	if err != nil || rf.Amount != "100.00" {
		t.Fatalf("refund of an archived payment: %+v, %v", rf, err)
	}
	if s := f.stored(t, rf.ID); s.Spec.Payment.AttemptReference != "shop."+f.settledTrxID+".1" || s.Spec.Destination != "+255754000111" {
		t.Errorf("refund of an archived payment: %+v", s.Spec)
	}
}

// TestRefundList: the list's filters and pages, and reads of one refund.
func TestRefundList(t *testing.T) {
	f := newRefundFixture(t)
	ctx := t.Context()
	c := f.as(t, f.duka, true)
	other := f.payment(t, "duka", paygatev1.EnvironmentSandbox, "order-2", "3000.00", paygatev1.PaymentSuccess, "tz-mpesa")
	var ids []string // oldest first
	for _, r := range []struct {
		trxID, amount string
	}{{f.settledTrxID, "100"}, {other, "200"}, {f.settledTrxID, "300"}, {other, "400"}, {other, "500"}} {
		f.clock.Step(time.Second)
		rf, err := c.CreateRefund(ctx, r.trxID, paygate.RefundRequest{Amount: json.Number(r.amount)}, "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rf.ID)
	}
	f.setPhase(t, ids[1], paygatev1.RefundSuccess, "")
	f.setPhase(t, ids[3], paygatev1.RefundFailed, "INVALID_ACCOUNT")
	// Another merchant's refund in the same namespace is never listed.
	foreign := f.payment(t, "slow", paygatev1.EnvironmentSandbox, "order-slow", "1000.00", paygatev1.PaymentSuccess, "tz-mpesa")
	if err := f.k8s.Create(ctx, &paygatev1.Refund{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "0d3f6a2c-1b4e-4c5d-8e9f-a0b1c2d3e4f5",
			Labels: map[string]string{paygatev1.LabelMerchant: "slow", paygatev1.LabelEnvironment: "sandbox", paygatev1.LabelPayment: foreign}},
		Spec: paygatev1.RefundSpec{MerchantRef: paygatev1.MerchantReference{Name: "slow"}, Environment: paygatev1.EnvironmentSandbox,
			Payment: paygatev1.RefundedPayment{TrxID: foreign, Amount: "1000.00", AttemptReference: "shop." + foreign + ".1"},
			Amount:  "10.00", Currency: "TZS", Destination: "+255754000111", Gateway: "tz-mpesa", CreatedAt: metav1.NewMicroTime(f.clock.Now())},
	}); err != nil {
		t.Fatal(err)
	}

	listIDs := func(opts paygate.ListOptions) ([]string, paygate.Pagination) {
		t.Helper()
		list, err := c.ListRefunds(ctx, opts)
		if err != nil {
			t.Fatalf("list %+v: %v", opts, err)
		}
		var got []string
		for _, r := range list.Data {
			got = append(got, r.ID)
		}
		return got, list.Pagination
	}
	for _, tc := range []struct {
		name  string
		opts  paygate.ListOptions
		want  []string
		total int
	}{
		{"all, newest first", paygate.ListOptions{}, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, 5},
		{"a page", paygate.ListOptions{Limit: 2, Offset: 1}, []string{ids[3], ids[2]}, 5},
		{"past the end", paygate.ListOptions{Limit: 2, Offset: 5}, nil, 5},
		{"one payment", paygate.ListOptions{Payment: f.settledTrxID}, []string{ids[2], ids[0]}, 2},
		{"one payment, a page", paygate.ListOptions{Payment: other, Limit: 1, Offset: 1}, []string{ids[3]}, 3},
		{"succeeded", paygate.ListOptions{Status: "success"}, []string{ids[1]}, 1},
		{"failed, of one payment", paygate.ListOptions{Status: "failed", Payment: other}, []string{ids[3]}, 1},
		{"pending", paygate.ListOptions{Status: "pending"}, []string{ids[4], ids[2], ids[0]}, 3},
		{"processing", paygate.ListOptions{Status: "processing"}, nil, 0},
		{"another merchant's payment", paygate.ListOptions{Payment: foreign}, nil, 0},
		{"not a trx_id", paygate.ListOptions{Payment: "order-2"}, nil, 0},
	} {
		got, page := listIDs(tc.opts)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") || page.Total != tc.total || page.Count != len(tc.want) {
			t.Errorf("%s: %v %+v, want %v total %d", tc.name, got, page, tc.want, tc.total)
		}
	}
	if _, page := listIDs(paygate.ListOptions{}); page.Limit != 20 || page.Offset != 0 {
		t.Errorf("default page %+v", page)
	}

	failed, err := c.GetRefund(ctx, ids[3])
	if err != nil || failed.Status != "failed" || failed.Reason != "INVALID_ACCOUNT" || failed.UpdatedAt == failed.CreatedAt {
		t.Errorf("a failed refund: %+v, %v", failed, err)
	}
	if ok, err := c.GetRefund(ctx, ids[1]); err != nil || ok.Status != "success" || ok.Reason != "" {
		t.Errorf("a successful refund: %+v, %v", ok, err)
	}

	for name, tc := range map[string]struct {
		creds  paygate.Credentials
		target string
		status int
		label  string
	}{
		"another merchant's refund":      {f.slow, "/api/v1/refunds/" + ids[0], 404, LabelNotFound},
		"the other merchant's own":       {f.duka, "/api/v1/refunds/0d3f6a2c-1b4e-4c5d-8e9f-a0b1c2d3e4f5", 404, LabelNotFound},
		"an unknown id":                  {f.duka, "/api/v1/refunds/6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f", 404, LabelNotFound},
		"a malformed id":                 {f.duka, "/api/v1/refunds/trx-1", 404, LabelNotFound},
		"an unknown status":              {f.duka, "/api/v1/refunds?status=refunded", 422, LabelValidationFailed},
		"a limit too large":              {f.duka, "/api/v1/refunds?limit=101", 422, LabelValidationFailed},
		"a negative offset":              {f.duka, "/api/v1/refunds?offset=-1", 422, LabelValidationFailed},
		"production lists its own":       {f.live, "/api/v1/refunds", 200, ""},
		"a pending business's list":      {f.newcomer, "/api/v1/refunds", 200, ""},
		"another merchant's payment":     {f.newcomer, "/api/v1/refunds?payment=" + other, 200, ""},
		"the refunds route takes no Put": {f.duka, "/api/v1/refunds", 405, LabelMethodNotAllowed},
	} {
		method := http.MethodGet
		if tc.status == 405 {
			method = http.MethodPut
		}
		resp, err := f.client(openapitest.NewValidator(t, openAPIDocument, nil).AllowUnknownRoutes(), tc.creds).Do(ctx, method, tc.target, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if resp.StatusCode != tc.status || (tc.label != "" && !strings.Contains(string(resp.Body), `"error":"`+tc.label+`"`)) {
			t.Errorf("%s: %d %s, want %d %s", name, resp.StatusCode, resp.Body, tc.status, tc.label)
		}
		if tc.status == 200 && strings.Contains(string(resp.Body), `"trx_id"`) {
			t.Errorf("%s: lists refunds that are not its own: %s", name, resp.Body)
		}
	}
}

// TestPaymentRecordRefundFields: the payment record (get, list) and the verification record
// report amount_refunded and refund_state from the refunds that succeeded.
func TestPaymentRecordRefundFields(t *testing.T) {
	f := newRefundFixture(t)
	ctx := t.Context()
	c := f.as(t, f.duka, true)
	expect := func(stage, amount, state string) {
		t.Helper()
		p, err := c.GetPayment(ctx, f.settledTrxID)
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.VerifyPayment(ctx, f.settledTrxID)
		if err != nil {
			t.Fatal(err)
		}
		list, err := c.ListPayments(ctx, paygate.ListOptions{MerchantRef: f.settledRef})
		if err != nil || len(list.Data) != 1 {
			t.Fatalf("list: %+v, %v", list, err)
		}
		for what, got := range map[string][2]string{
			"get":    {p.AmountRefunded.String(), p.RefundState},
			"verify": {v.AmountRefunded.String(), v.RefundState},
			"list":   {list.Data[0].AmountRefunded.String(), list.Data[0].RefundState},
		} {
			if got != [2]string{amount, state} {
				t.Errorf("%s: %s says %s %s, want %s %s", stage, what, got[0], got[1], amount, state)
			}
		}
		if p.Status != "success" || v.Status != "success" {
			t.Errorf("%s: the payment's status changed: %s / %s", stage, p.Status, v.Status)
		}
	}
	expect("no refund", "0.00", "none")
	a, err := c.CreateRefund(ctx, f.settledTrxID, paygate.RefundRequest{Amount: "500"}, "")
	if err != nil {
		t.Fatal(err)
	}
	expect("a pending refund", "0.00", "none")
	f.setPhase(t, a.ID, paygatev1.RefundSuccess, "")
	expect("a successful partial refund", "500.00", "partial")
	f.clock.Step(time.Second)
	b, err := c.CreateRefund(ctx, f.settledTrxID, paygate.RefundRequest{Amount: "400.50"}, "")
	if err != nil {
		t.Fatal(err)
	}
	f.setPhase(t, b.ID, paygatev1.RefundFailed, "PAYMENT_DECLINED")
	expect("a failed refund", "500.00", "partial")
	f.clock.Step(time.Second)
	rest, err := c.CreateRefund(ctx, f.settledTrxID, paygate.RefundRequest{}, "")
	if err != nil || rest.Amount != "1000.00" {
		t.Fatalf("the rest: %+v, %v", rest, err)
	}
	f.setPhase(t, rest.ID, paygatev1.RefundProcessing, "")
	expect("a processing refund", "500.00", "partial")
	f.setPhase(t, rest.ID, paygatev1.RefundSuccess, "")
	expect("refunded in full", "1500.00", "full")

	// A pending payment: nothing refunded.
	pending := f.payment(t, "duka", paygatev1.EnvironmentSandbox, "order-pending", "1000.00", paygatev1.PaymentPending, "")
	if p, err := c.GetPayment(ctx, pending); err != nil || p.AmountRefunded.String() != "0.00" || p.RefundState != "none" {
		t.Errorf("a pending payment: %+v, %v", p, err)
	}

	// A cache without the refund index (a plain client) reads the refunds by label, alike.
	var refunds paygatev1.RefundList
	if err := f.k8s.List(ctx, &refunds); err != nil {
		t.Fatal(err)
	}
	p := &paygatev1.Payment{}
	if err := f.k8s.Get(ctx, client.ObjectKey{Namespace: "shop", Name: f.settledTrxID}, p); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{p}
	for i := range refunds.Items {
		objs = append(objs, &refunds.Items[i])
	}
	plain := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(objs...).Build()
	s := New(Options{Cache: plain, Writer: plain, APIReader: plain, CheckoutKey: []byte("k")})
	rec, err := s.paymentRecord(p)
	if err != nil || rec.AmountRefunded.String() != "1500.00" || rec.RefundState != "full" {
		t.Errorf("without the index: %s %s, %v", rec.AmountRefunded, rec.RefundState, err)
	}
}

// TestSummarizeRefunds: the sum is exact and at the currency's scale, and only another merchant's
// or environment's refund of the same trx_id is left out.
func TestSummarizeRefunds(t *testing.T) {
	p := &paygatev1.Payment{ObjectMeta: metav1.ObjectMeta{Name: "trx-a"},
		Spec: paygatev1.PaymentSpec{Amount: "0.30", Currency: "TZS"}}
	refund := func(amount string, phase paygatev1.RefundPhase) paygatev1.Refund {
		return paygatev1.Refund{Spec: paygatev1.RefundSpec{Amount: paygatev1.Decimal(amount)}, Status: paygatev1.RefundStatus{Phase: phase}}
	}
	for _, tc := range []struct {
		name          string
		refunds       []paygatev1.Refund
		amount, state string
	}{
		{"none", nil, "0.00", "none"},
		{"pending only", []paygatev1.Refund{refund("0.10", "")}, "0.00", "none"},
		{"0.1 + 0.2 is 0.3, exactly", []paygatev1.Refund{refund("0.1", paygatev1.RefundSuccess), refund("0.20", paygatev1.RefundSuccess)}, "0.30", "full"},
		{"part", []paygatev1.Refund{refund("0.10", paygatev1.RefundSuccess), refund("0.20", paygatev1.RefundFailed)}, "0.10", "partial"},
	} {
		amount, state, err := summarizeRefunds(p, tc.refunds)
		if err != nil || amount.String() != tc.amount || state != tc.state {
			t.Errorf("%s: %s %s, %v; want %s %s", tc.name, amount, state, err, tc.amount, tc.state)
		}
	}
	if _, _, err := summarizeRefunds(p, []paygatev1.Refund{refund("x", paygatev1.RefundSuccess)}); err == nil {
		t.Error("a stored amount that does not parse is summed")
	}
}

// TestLateSettlementRecord: what a payment record says of a late settlement under each policy,
// read from what the payment controller stored; nothing for any other payment.
func TestLateSettlementRecord(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 15, 10, 2, 11, 0, time.UTC))
	late := func(net paygatev1.Decimal) *paygatev1.Payment {
		p := &paygatev1.Payment{
			ObjectMeta: metav1.ObjectMeta{Name: "trx-aaaaaaaaaaaaaaaaaaaaaaaa"},
			Spec:       paygatev1.PaymentSpec{Amount: "10000", Currency: "TZS"},
			Status: paygatev1.PaymentStatus{Phase: paygatev1.PaymentFailed, NetAmount: net, Conditions: []metav1.Condition{{
				Type: paygatev1.ConditionLateSettlement, Status: metav1.ConditionTrue, Reason: "SettledAfterFailure", LastTransitionTime: at}}},
		}
		if net != "" {
			p.Status.Fee = "0.00"
		}
		return p
	}
	lateRefund := paygatev1.Refund{ObjectMeta: metav1.ObjectMeta{Name: "0b6c3d0e-5a8b-4c3e-9f7a-1b2c3d4e5f60",
		Labels: map[string]string{paygatev1.LabelLateSettlement: "true"}}}
	merchantRefund := paygatev1.Refund{ObjectMeta: metav1.ObjectMeta{Name: "1b6c3d0e-5a8b-4c3e-9f7a-1b2c3d4e5f60"}}
	succeeded := late("")
	succeeded.Status.Phase = paygatev1.PaymentSuccess
	flagNotTrue := late("")
	flagNotTrue.Status.Conditions[0].Status = metav1.ConditionFalse
	tests := []struct {
		name    string
		p       *paygatev1.Payment
		refunds []paygatev1.Refund
		want    *paygate.LateSettlement
	}{
		{"a successful payment has none", succeeded, nil, nil},
		{"a failed payment without the condition has none", flagNotTrue, nil, nil},
		{"Flag: nothing stored, flagged", late(""), nil,
			&paygate.LateSettlement{Amount: "10000.00", Handling: "flagged", NetAmount: "0.00", SettledAt: "2026-01-15T10:02:11.000000Z"}},
		{"Credit: the net amount stored, credited", late("9750.00"), []paygatev1.Refund{merchantRefund},
			&paygate.LateSettlement{Amount: "10000.00", Handling: "credited", NetAmount: "9750.00", SettledAt: "2026-01-15T10:02:11.000000Z"}},
		{"Refund: the late-settlement refund named", late("10000.00"), []paygatev1.Refund{merchantRefund, lateRefund},
			&paygate.LateSettlement{Amount: "10000.00", Handling: "refunded", NetAmount: "0.00", RefundID: lateRefund.Name, SettledAt: "2026-01-15T10:02:11.000000Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lateSettlementRecord(tt.p, tt.refunds)
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
