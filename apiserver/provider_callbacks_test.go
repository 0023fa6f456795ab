// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/test/fakedaraja"
)

// callbackCluster is an apiserver serving the provider callback routes over HTTP, on an
// in-memory cluster with a Daraja gateway (backed by test/fakedaraja) and a pawaPay gateway, and
// the manager's side: the Daraja adapter that sends, with result URLs at this apiserver.
type callbackCluster struct {
	k8s     client.Client
	srv     *httptest.Server
	daraja  *fakedaraja.Server
	manager *provider.Daraja
}

const (
	cbNamespace     = "shop"
	cbDarajaGateway = "mpesa-ke"
	cbPawapay       = "vodacom-tz"
	cbPhone         = "+" + fakedaraja.SandboxMSISDN
)

func newCallbackCluster(t *testing.T) *callbackCluster {
	t.Helper()
	dj := fakedaraja.New(t, fakedaraja.Options{})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "paygate-system", Name: "daraja", Labels: map[string]string{paygatev1.LabelCredential: provider.CredentialKindDaraja}},
		Data: map[string][]byte{
			provider.DarajaSecretConsumerKey: []byte(dj.ConsumerKey()), provider.DarajaSecretConsumerSecret: []byte(dj.ConsumerSecret()),
			provider.DarajaSecretPasskey: []byte(dj.Passkey()), provider.DarajaSecretCallbackSecret: []byte("0123456789abcdef-callback"),
			provider.DarajaSecretInitiatorName: []byte(dj.InitiatorName()), provider.DarajaSecretInitiatorPassword: []byte(dj.InitiatorPassword()),
			provider.DarajaSecretCertificate: dj.CertificatePEM(),
		},
	}
	darajaGW := &paygatev1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: cbDarajaGateway, Generation: 1},
		Spec: paygatev1.GatewaySpec{DisplayName: "M-Pesa Kenya", Currency: "KES", Type: paygatev1.GatewayTypeAutomatic, Provider: paygatev1.ProviderDaraja,
			Daraja: &paygatev1.DarajaConfig{BaseURL: dj.URL(), ShortCode: dj.ShortCode(),
				CredentialsSecretRef: paygatev1.SecretReference{Namespace: "paygate-system", Name: "daraja"}}},
	}
	pawapayGW := &paygatev1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: cbPawapay, Generation: 1},
		Spec: paygatev1.GatewaySpec{DisplayName: "Vodacom Tanzania", Currency: "TZS", Type: paygatev1.GatewayTypeAutomatic, Provider: paygatev1.ProviderPawapay,
			Pawapay: &paygatev1.PawapayConfig{BaseURL: "http://127.0.0.1:1", Provider: "VODACOM_TZA", Country: "TZA",
				CredentialsSecretRef: paygatev1.PawapayCredentialsReference{Namespace: "paygate-system", Name: "pawapay", Key: "token"}}},
	}
	fc := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(secret, darajaGW, pawapayGW).
		WithStatusSubresource(&paygatev1.Payment{}, &paygatev1.Refund{}).Build()
	api := New(Options{Cache: fc, Writer: fc, APIReader: fc, CheckoutKey: []byte("checkout-key")})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	mgr := &provider.Gateways{Reader: fc, DarajaCallbackURL: srv.URL + "/internal/provider/callbacks/daraja"}
	d, err := mgr.Daraja(context.Background(), darajaGW)
	if err != nil {
		t.Fatal(err)
	}
	return &callbackCluster{k8s: fc, srv: srv, daraja: dj, manager: d}
}

// payment creates a pending payment with one recorded push attempt through gateway; it returns
// the payment's name and the attempt's reference.
func (c *callbackCluster) payment(t *testing.T, order string, gateway paygatev1.GatewayCode) (string, string) {
	t.Helper()
	trx := TrxID("uid-duka", paygatev1.EnvironmentSandbox, order)
	ref := cbNamespace + "." + trx + ".1"
	p := &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Namespace: cbNamespace, Name: trx},
		Spec: paygatev1.PaymentSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentProduction,
			MerchantReference: order, Amount: "250.00", Currency: "KES", Mode: paygatev1.PaymentModeHosted,
			Customer: paygatev1.Customer{Name: "Asha", Phone: cbPhone}},
		Status: paygatev1.PaymentStatus{Phase: paygatev1.PaymentPending, Gateway: gateway, Attempts: []paygatev1.PushAttempt{{
			Sequence: 1, Reference: ref, Gateway: gateway, Phase: paygatev1.AttemptInitiating, StartedAt: metav1.NewMicroTime(time.Now()),
		}}},
	}
	if err := c.k8s.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return trx, ref
}

// refund creates a processing refund of the payment trx (attempt paymentRef) with its attempt
// recorded; it returns the refund's reference.
func (c *callbackCluster) refund(t *testing.T, name, trx, paymentRef, receipt string, gateway paygatev1.GatewayCode) string {
	t.Helper()
	rf := &paygatev1.Refund{
		ObjectMeta: metav1.ObjectMeta{Namespace: cbNamespace, Name: name},
		Spec: paygatev1.RefundSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentProduction,
			Payment: paygatev1.RefundedPayment{TrxID: trx, Amount: "250.00", AttemptReference: paymentRef, Receipt: receipt},
			Amount:  "250.00", Currency: "KES", Destination: cbPhone, Gateway: gateway, CreatedAt: metav1.NowMicro()},
	}
	rf.Status = paygatev1.RefundStatus{Phase: paygatev1.RefundProcessing, Attempt: &paygatev1.DisbursementAttempt{
		Reference: cbNamespace + "." + name + ".r", Phase: paygatev1.AttemptInitiating, StartedAt: metav1.NewMicroTime(time.Now())}}
	if err := c.k8s.Create(context.Background(), rf); err != nil {
		t.Fatal(err)
	}
	return rf.RefundReference()
}

func (c *callbackCluster) annotations(t *testing.T, obj client.Object) map[string]string {
	t.Helper()
	if err := c.k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	return obj.GetAnnotations()
}

// waitAnnotation polls obj until its annotation key is want.
func (c *callbackCluster) waitAnnotation(t *testing.T, obj client.Object, key string, want func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v := c.annotations(t, obj)[key]
		if want(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s of %s is %q", key, obj.GetName(), v)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// post sends body to an absolute callback URL of this apiserver and returns the HTTP status.
func post(t *testing.T, url string, body []byte) int {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// lastCallback is the body of the fake's latest POST to url.
func (c *callbackCluster) lastCallback(t *testing.T, url string) []byte {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		cbs := c.daraja.Callbacks()
		for i := len(cbs) - 1; i >= 0; i-- {
			if cbs[i].URL == url {
				return cbs[i].Body
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no callback to %s", url)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDarajaRefundCallbacks: the M-Pesa Express callback of a successful push leaves its M-PESA
// receipt on the payment (even once the payment ended), and the result of the reversal a Daraja
// refund sends is recorded on the Refund, at the refund's own result URL, only when it is about
// that reversal.
func TestDarajaRefundCallbacks(t *testing.T) {
	c := newCallbackCluster(t)
	ctx := context.Background()
	trx, payRef := c.payment(t, "order-ke-1", cbDarajaGateway)
	payment := &paygatev1.Payment{ObjectMeta: metav1.ObjectMeta{Namespace: cbNamespace, Name: trx}}

	// The push: Daraja posts the callback to the apiserver, which records the receipt.
	pushed, err := c.manager.Push(ctx, provider.PushRequest{Reference: payRef, Phone: cbPhone, Amount: "250", Currency: "KES", Description: "Order"})
	if err != nil {
		t.Fatal(err)
	}
	v := c.waitAnnotation(t, payment, paygatev1.AnnotationProviderReceipt, func(v string) bool { return v != "" })
	gotRef, receipt, ok := paygatev1.ParseProviderReceipt(v)
	stk, err := provider.ParseSTKCallback(c.lastCallback(t, c.manager.CallbackURLFor(payRef)))
	if !ok || gotRef != payRef || err != nil || receipt != stk.MpesaReceiptNumber {
		t.Fatalf("receipt annotation %q, want %q and the callback's receipt %q (%v)", v, payRef, stk.MpesaReceiptNumber, err)
	}
	ann := c.annotations(t, payment)
	if ann[paygatev1.AnnotationProviderReference] != payRef+" "+pushed.ProviderReference || !strings.HasPrefix(ann[paygatev1.AnnotationProviderCallback], "SUCCESS ") {
		t.Fatalf("payment annotations %v", ann)
	}

	// Once the payment ended (the controller confirmed it by query), a callback still leaves its
	// receipt, and wakes nothing.
	delete(payment.Annotations, paygatev1.AnnotationProviderReceipt)
	woke := payment.Annotations[paygatev1.AnnotationProviderCallback]
	if err := c.k8s.Update(ctx, payment); err != nil {
		t.Fatal(err)
	}
	payment.Status.Phase = paygatev1.PaymentSuccess
	if err := c.k8s.Status().Update(ctx, payment); err != nil {
		t.Fatal(err)
	}
	stkBody := c.lastCallback(t, c.manager.CallbackURLFor(payRef))
	if code := post(t, c.manager.CallbackURLFor(payRef), stkBody); code != http.StatusOK {
		t.Fatalf("callback of an ended payment: HTTP %d", code)
	}
	ann = c.annotations(t, payment)
	if ann[paygatev1.AnnotationProviderReceipt] != payRef+" "+receipt || ann[paygatev1.AnnotationProviderCallback] != woke {
		t.Fatalf("after a callback of an ended payment: %v", ann)
	}

	// A receipt that is not one token is refused, and nothing is recorded.
	bad := bytes.Replace(stkBody, []byte(`"`+receipt+`"`), []byte(`"SJ1 2;rm"`), 1)
	if bytes.Equal(bad, stkBody) {
		t.Fatalf("the receipt is not a JSON string in %s", stkBody)
	}
	if code := post(t, c.manager.CallbackURLFor(payRef), bad); code != http.StatusBadRequest {
		t.Fatalf("callback with a malformed receipt: HTTP %d, want 400", code)
	}
	if got := c.annotations(t, payment)[paygatev1.AnnotationProviderReceipt]; got != payRef+" "+receipt {
		t.Fatalf("receipt after a refused callback %q", got)
	}

	// The refund: a reversal of the receipt, whose result Daraja posts to the refund's result
	// URL; the apiserver records it on the Refund.
	rfRef := c.refund(t, "0b0c9a52-5f57-4d4e-9a41-1d8c9c1f2e01", trx, payRef, receipt, cbDarajaGateway)
	rf := &paygatev1.Refund{ObjectMeta: metav1.ObjectMeta{Namespace: cbNamespace, Name: "0b0c9a52-5f57-4d4e-9a41-1d8c9c1f2e01"}}
	res, err := c.manager.Refund(ctx, provider.RefundRequest{Reference: rfRef, Payment: payRef, PaymentReceipt: receipt, PaymentAmount: "250.00",
		Full: true, Phone: cbPhone, Amount: "250.00", Currency: "KES"})
	if err != nil || res.Status != provider.StatusPending {
		t.Fatalf("Refund = %+v, %v", res, err)
	}
	v = c.waitAnnotation(t, rf, paygatev1.AnnotationProviderResult, func(v string) bool { return v != "" })
	if v != rfRef+" SUCCESS" || !strings.HasPrefix(c.annotations(t, rf)[paygatev1.AnnotationProviderCallback], "SUCCESS ") {
		t.Fatalf("refund annotations %v", c.annotations(t, rf))
	}
	resultBody := c.lastCallback(t, c.manager.ResultURLFor(rfRef))

	// The attempt stores the acknowledgement's ConversationID: a result about another one, or
	// about another transaction than the payment's receipt, is not the refund's.
	rf.Status.Attempt.ProviderReference, rf.Status.Attempt.Phase = res.ProviderReference, paygatev1.AttemptPending
	if err := c.k8s.Status().Update(ctx, rf); err != nil {
		t.Fatal(err)
	}
	if code := post(t, c.manager.ResultURLFor(rfRef), resultBody); code != http.StatusOK {
		t.Fatalf("the reversal result again: HTTP %d", code)
	}
	otherConversation := bytes.Replace(resultBody, []byte(`"`+res.ProviderReference+`"`), []byte(`"AG_20260101_000000000000000000"`), 1)
	otherOriginal := bytes.Replace(resultBody, []byte(`"`+receipt+`"`), []byte(`"SJ00000000"`), 1)
	if bytes.Equal(otherConversation, resultBody) || bytes.Equal(otherOriginal, resultBody) {
		t.Fatalf("the result does not carry the ConversationID and the receipt: %s", resultBody)
	}
	for _, tc := range []struct {
		name, url string
		body      []byte
		want      int
	}{
		{"another ConversationID", c.manager.ResultURLFor(rfRef), otherConversation, http.StatusNotFound},
		{"another original transaction", c.manager.ResultURLFor(rfRef), otherOriginal, http.StatusNotFound},
		{"not a result", c.manager.ResultURLFor(rfRef), stkBody, http.StatusBadRequest},
		// A refund has no M-Pesa Express callback.
		{"an STK callback for a refund", c.manager.CallbackURLFor(rfRef), stkBody, http.StatusNotFound},
		// The refund's result at the payment's result URL: the path token names the payment.
		{"at the payment's result URL", c.manager.ResultURLFor(payRef), resultBody, http.StatusNotFound},
	} {
		if code := post(t, tc.url, tc.body); code != tc.want {
			t.Errorf("%s: HTTP %d, want %d", tc.name, code, tc.want)
		}
	}
	// A queue time-out notice after the final result changes nothing recorded.
	timeout, _ := json.Marshal(map[string]any{"Result": map[string]any{"ResultType": 1, "ResultCode": 1, "ResultDesc": "The service request timed out.",
		"OriginatorConversationID": "x", "ConversationID": res.ProviderReference}})
	if code := post(t, c.manager.QueueTimeoutURLFor(rfRef), timeout); code != http.StatusOK {
		t.Fatalf("queue time-out notice: HTTP %d", code)
	}
	if got := c.annotations(t, rf)[paygatev1.AnnotationProviderResult]; got != rfRef+" SUCCESS" {
		t.Fatalf("result after a late time-out notice %q", got)
	}
}

// TestPawapayRefundCallback: a pawaPay refund callback (its clientReferenceId the refund's
// reference, its refundId the one Paygate derives) wakes the refund; one that names another
// refundId, or a refund as a deposit, is unknown.
func TestPawapayRefundCallback(t *testing.T) {
	c := newCallbackCluster(t)
	trx, payRef := c.payment(t, "order-tz-1", cbPawapay)
	rfRef := c.refund(t, "6f1e3d1e-8b1a-4c55-a0b5-0a3c1a6a9d10", trx, payRef, "", cbPawapay)
	rf := &paygatev1.Refund{ObjectMeta: metav1.ObjectMeta{Namespace: cbNamespace, Name: "6f1e3d1e-8b1a-4c55-a0b5-0a3c1a6a9d10"}}
	url := c.srv.URL + "/internal/provider/callbacks/pawapay"
	callback := func(field, id string) []byte {
		b, _ := json.Marshal(map[string]any{field: id, "status": "COMPLETED", "amount": "250", "currency": "TZS", "clientReferenceId": rfRef})
		return b
	}
	if code := post(t, url, callback("refundId", provider.PawapayRefundID(payRef))); code != http.StatusNotFound {
		t.Fatalf("a refund callback with another refundId: HTTP %d, want 404", code)
	}
	if code := post(t, url, callback("depositId", provider.PawapayDepositID(rfRef))); code != http.StatusNotFound {
		t.Fatalf("a deposit callback naming a refund: HTTP %d, want 404", code)
	}
	if v := c.annotations(t, rf)[paygatev1.AnnotationProviderCallback]; v != "" {
		t.Fatalf("refused callbacks woke the refund: %q", v)
	}
	if code := post(t, url, callback("refundId", provider.PawapayRefundID(rfRef))); code != http.StatusOK {
		t.Fatalf("refund callback: HTTP %d", code)
	}
	ann := c.annotations(t, rf)
	if !strings.HasPrefix(ann[paygatev1.AnnotationProviderCallback], "SUCCESS ") || ann[paygatev1.AnnotationProviderResult] != "" {
		t.Fatalf("refund annotations %v (a pawaPay callback only wakes)", ann)
	}
}
