// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
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
	"github.com/paygate/paygate/test/fakeupstream"
)

const cbUpstream = "ke-upstream"

// upstreamCallbackCluster is a callbackCluster whose gateway is an upstream one, backed by
// test/fakeupstream, whose callbacks go to this apiserver's upstream callback route; up is the
// manager's side, the adapter that sends the operations.
type upstreamCallbackCluster struct {
	*callbackCluster
	fake *fakeupstream.Server
	up   *provider.Upstream
	url  string
}

func newUpstreamCallbackCluster(t *testing.T) *upstreamCallbackCluster {
	t.Helper()
	fu := fakeupstream.New(t, fakeupstream.Options{})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "paygate-system", Name: cbUpstream, Labels: map[string]string{paygatev1.LabelCredential: provider.CredentialKindUpstream}},
		Data:       map[string][]byte{provider.UpstreamSecretToken: []byte(fu.Token), provider.UpstreamSecretCallbackSecret: fu.CallbackSecret},
	}
	gw := &paygatev1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: cbUpstream, Generation: 1},
		Spec: paygatev1.GatewaySpec{DisplayName: "Mobile money Kenya", Currency: "KES", Type: paygatev1.GatewayTypeAutomatic, Provider: paygatev1.ProviderUpstream,
			Upstream: &paygatev1.UpstreamConfig{BaseURL: fu.URL(), SecretRef: paygatev1.SecretReference{Namespace: "paygate-system", Name: cbUpstream}}},
	}
	fc := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(secret, gw).
		WithStatusSubresource(&paygatev1.Payment{}, &paygatev1.Refund{}, &paygatev1.Payout{}).Build()
	srv := httptest.NewServer(New(Options{Cache: fc, Writer: fc, APIReader: fc, CheckoutKey: []byte("checkout-key")}))
	t.Cleanup(srv.Close)
	up, err := provider.NewUpstream(provider.UpstreamConfig{BaseURL: fu.URL(), Token: fu.Token})
	if err != nil {
		t.Fatal(err)
	}
	return &upstreamCallbackCluster{callbackCluster: &callbackCluster{k8s: fc, srv: srv}, fake: fu, up: up, url: srv.URL + "/internal/provider/callbacks"}
}

// send posts a callback body signed with secret, now, to the upstream callback route.
func (c *upstreamCallbackCluster) send(t *testing.T, secret []byte, body string) int {
	t.Helper()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(provider.CallbackTimestampHeader, ts)
	req.Header.Set(provider.CallbackSignatureHeader, provider.SignCallback(secret, ts, []byte(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func upstreamCallbackBody(reference, status, kind string) string {
	return `{"reference":"` + reference + `","provider_reference":"FKR1","status":"` + status + `","code":"","message":"","kind":"` + kind + `"}`
}

// TestUpstreamRefundCallback: the upstream provider's refund callback wakes the Refund its
// reference names ("<namespace>.<refund>.r"); a forged one, one of another kind, or one naming a
// refund that does not exist or whose attempt is another reference, is refused and writes
// nothing. An ended refund is woken only by a SUCCESS of one that failed.
func TestUpstreamRefundCallback(t *testing.T) {
	c := newUpstreamCallbackCluster(t)
	ctx := context.Background()
	trx, payRef := c.payment(t, "order-up-1", cbUpstream)
	rfName := "5b0c7a52-2f57-4d5e-9a63-6f7b1c2d3e4f"
	rfRef := c.refund(t, rfName, trx, payRef, "", cbUpstream)
	rf := &paygatev1.Refund{ObjectMeta: metav1.ObjectMeta{Namespace: cbNamespace, Name: rfName}}
	p := &paygatev1.Payment{ObjectMeta: metav1.ObjectMeta{Namespace: cbNamespace, Name: trx}}
	secret := c.fake.CallbackSecret

	for name, tc := range map[string]struct {
		secret []byte
		body   string
		want   int
	}{
		"forged":               {[]byte("not-the-callback-secret"), upstreamCallbackBody(rfRef, "SUCCESS", "refund"), http.StatusUnauthorized},
		"payment's reference":  {secret, upstreamCallbackBody(payRef, "SUCCESS", "refund"), http.StatusNotFound},
		"collection kind":      {secret, upstreamCallbackBody(rfRef, "SUCCESS", "collection"), http.StatusNotFound},
		"disbursement kind":    {secret, upstreamCallbackBody(rfRef, "SUCCESS", "disbursement"), http.StatusNotFound},
		"unknown refund":       {secret, upstreamCallbackBody(cbNamespace+".no-such-refund.r", "SUCCESS", "refund"), http.StatusNotFound},
		"other namespace":      {secret, upstreamCallbackBody("other."+rfName+".r", "SUCCESS", "refund"), http.StatusNotFound},
		"not a reference":      {secret, upstreamCallbackBody(cbNamespace+"."+rfName+".x.r", "SUCCESS", "refund"), http.StatusBadRequest},
		"empty refund name":    {secret, upstreamCallbackBody(cbNamespace+"..r", "SUCCESS", "refund"), http.StatusBadRequest},
		"refund's kind, wrong": {secret, upstreamCallbackBody(rfRef, "SUCCESS", "REFUND"), http.StatusBadRequest},
	} {
		if code := c.send(t, tc.secret, tc.body); code != tc.want {
			t.Errorf("%s: HTTP %d, want %d", name, code, tc.want)
		}
	}
	if v := c.annotations(t, rf)[paygatev1.AnnotationProviderCallback]; v != "" {
		t.Fatalf("refused callbacks woke the refund: %q", v)
	}
	if v := c.annotations(t, p)[paygatev1.AnnotationProviderCallback]; v != "" {
		t.Fatalf("refused callbacks woke the payment: %q", v)
	}

	// The provider's own callback, sent when the refund it accepted settles.
	c.fake.ScriptRefunds(cbPhone, fakeupstream.Scenario{Callback: true})
	res, err := c.up.Refund(ctx, provider.RefundRequest{Reference: rfRef, Payment: payRef, Phone: cbPhone, Amount: "250.00", Currency: "KES",
		Gateway: cbUpstream, CallbackURL: c.url})
	if err != nil || res.Status != provider.StatusSuccess {
		t.Fatalf("refund at the fake: %+v, %v", res, err)
	}
	c.waitAnnotation(t, rf, paygatev1.AnnotationProviderCallback, func(v string) bool { return strings.HasPrefix(v, "SUCCESS ") })
	if c.fake.CallbacksFailed() != 0 {
		t.Fatalf("%d callbacks refused", c.fake.CallbacksFailed())
	}
	if v := c.annotations(t, p)[paygatev1.AnnotationProviderCallback]; v != "" {
		t.Fatalf("the refund's callback woke the payment: %q", v)
	}
	v := c.annotations(t, rf)[paygatev1.AnnotationProviderCallback]
	at, err := time.Parse(time.RFC3339, strings.TrimPrefix(v, "SUCCESS "))
	if err != nil || time.Since(at) > time.Minute {
		t.Fatalf("annotation %q", v)
	}

	// An ended refund: a failed one is woken by a SUCCESS only, a successful one by nothing.
	setPhase := func(phase paygatev1.RefundPhase) {
		t.Helper()
		if err := c.k8s.Get(ctx, client.ObjectKeyFromObject(rf), rf); err != nil {
			t.Fatal(err)
		}
		delete(rf.Annotations, paygatev1.AnnotationProviderCallback)
		if err := c.k8s.Update(ctx, rf); err != nil {
			t.Fatal(err)
		}
		rf.Status.Phase = phase
		if err := c.k8s.Status().Update(ctx, rf); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		phase  paygatev1.RefundPhase
		status string
		wakes  bool
	}{
		{paygatev1.RefundFailed, "FAILED", false},
		{paygatev1.RefundFailed, "INPROGRESS", false},
		{paygatev1.RefundFailed, "SUCCESS", true},
		{paygatev1.RefundSuccess, "FAILED", false},
		{paygatev1.RefundSuccess, "SUCCESS", false},
		{paygatev1.RefundProcessing, "FAILED", true},
	} {
		setPhase(tc.phase)
		if code := c.send(t, secret, upstreamCallbackBody(rfRef, tc.status, "refund")); code != http.StatusOK {
			t.Fatalf("%s callback to a %s refund: HTTP %d", tc.status, tc.phase, code)
		}
		v := c.annotations(t, rf)[paygatev1.AnnotationProviderCallback]
		want := map[string]string{"INPROGRESS": "PENDING"}[tc.status]
		if want == "" {
			want = tc.status
		}
		if woke := strings.HasPrefix(v, want+" "); woke != tc.wakes || (!tc.wakes && v != "") {
			t.Fatalf("%s callback to a %s refund: annotation %q", tc.status, tc.phase, v)
		}
	}
}

// TestUpstreamPayoutCallback: a disbursement callback wakes the Payout its reference names
// ("<namespace>.<payout>"), and a payment's callbacks still wake the payment.
func TestUpstreamPayoutCallback(t *testing.T) {
	c := newUpstreamCallbackCluster(t)
	ctx := context.Background()
	trx, payRef := c.payment(t, "order-up-2", cbUpstream)
	poRef := cbNamespace + ".po-1"
	po := &paygatev1.Payout{
		ObjectMeta: metav1.ObjectMeta{Namespace: cbNamespace, Name: "po-1"},
		Spec: paygatev1.PayoutSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentProduction,
			Amount: "1000.00", Fee: "0.00", PayableAmount: "1000.00", Currency: "KES", Destination: cbPhone, Gateway: cbUpstream, CreatedAt: metav1.NowMicro()},
		Status: paygatev1.PayoutStatus{Phase: paygatev1.PayoutProcessing, Attempt: &paygatev1.DisbursementAttempt{
			Reference: poRef, Phase: paygatev1.AttemptInitiating, StartedAt: metav1.NewMicroTime(time.Now())}},
	}
	if err := c.k8s.Create(ctx, po); err != nil {
		t.Fatal(err)
	}
	secret := c.fake.CallbackSecret
	if code := c.send(t, []byte("forged"), upstreamCallbackBody(poRef, "SUCCESS", "disbursement")); code != http.StatusUnauthorized {
		t.Fatalf("forged payout callback: HTTP %d", code)
	}
	if code := c.send(t, secret, upstreamCallbackBody(poRef, "SUCCESS", "refund")); code != http.StatusNotFound {
		t.Fatalf("refund callback naming a payout: HTTP %d", code)
	}
	if code := c.send(t, secret, upstreamCallbackBody(cbNamespace+".po-2", "SUCCESS", "disbursement")); code != http.StatusNotFound {
		t.Fatalf("callback naming no payout: HTTP %d", code)
	}
	if v := c.annotations(t, po)[paygatev1.AnnotationProviderCallback]; v != "" {
		t.Fatalf("refused callbacks woke the payout: %q", v)
	}

	c.fake.Script(cbPhone, fakeupstream.Scenario{Callback: true})
	res, err := c.up.Disburse(ctx, provider.DisbursementRequest{Reference: poRef, Phone: cbPhone, Amount: "1000.00", Currency: "KES", Gateway: cbUpstream, CallbackURL: c.url})
	if err != nil || res.Status != provider.StatusSuccess {
		t.Fatalf("disbursement at the fake: %+v, %v", res, err)
	}
	c.waitAnnotation(t, po, paygatev1.AnnotationProviderCallback, func(v string) bool { return strings.HasPrefix(v, "SUCCESS ") })

	p := &paygatev1.Payment{ObjectMeta: metav1.ObjectMeta{Namespace: cbNamespace, Name: trx}}
	if code := c.send(t, secret, upstreamCallbackBody(payRef, "FAILED", "disbursement")); code != http.StatusNotFound {
		t.Fatalf("disbursement callback naming a payment: HTTP %d", code)
	}
	if code := c.send(t, secret, upstreamCallbackBody(payRef, "FAILED", "collection")); code != http.StatusOK {
		t.Fatalf("collection callback: HTTP %d", code)
	}
	if v := c.annotations(t, p)[paygatev1.AnnotationProviderCallback]; !strings.HasPrefix(v, "FAILED ") {
		t.Fatalf("payment annotation %q", v)
	}
}
