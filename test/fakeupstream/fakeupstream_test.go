// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package fakeupstream_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/test/fakeupstream"
)

func newFakeClock() *testingclock.FakeClock {
	return testingclock.NewFakeClock(time.Unix(1_750_000_000, 0))
}

func adapter(t *testing.T, f *fakeupstream.Server, timeout time.Duration) *provider.Upstream {
	t.Helper()
	up, err := provider.NewUpstream(provider.UpstreamConfig{BaseURL: f.URL(), Token: f.Token, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return up
}

func push(ref, phone, callbackURL string) provider.PushRequest {
	return provider.PushRequest{Reference: ref, Phone: phone, Amount: "1500.00", Currency: "TZS", Gateway: "MPESA_TZ", Description: "test", CallbackURL: callbackURL}
}

func mustStatus(t *testing.T, got provider.Result, err error, want provider.Status) provider.Result {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if got.Status != want {
		t.Fatalf("status %s, want %s (%+v)", got.Status, want, got)
	}
	return got
}

func TestImmediateSuccess(t *testing.T) {
	f := fakeupstream.New(t, fakeupstream.Options{})
	up := adapter(t, f, time.Second)
	ctx := context.Background()

	res, err := up.Push(ctx, push("pay_1", "+255712345678", ""))
	mustStatus(t, res, err, provider.StatusSuccess)
	if res.ProviderReference == "" {
		t.Fatal("no provider reference")
	}
	st, err := up.PushStatus(ctx, provider.PushRequest{Reference: "pay_1"})
	mustStatus(t, st, err, provider.StatusSuccess)
	if st.ProviderReference != res.ProviderReference {
		t.Fatalf("provider reference changed: %s vs %s", st.ProviderReference, res.ProviderReference)
	}
	if _, err := up.PushStatus(ctx, provider.PushRequest{Reference: "pay_unknown"}); err != provider.ErrNotFound {
		t.Fatalf("unknown reference: %v, want ErrNotFound", err)
	}
	if f.Pushes() != 1 || f.Operations() != 1 || f.PushesFor("pay_1") != 1 {
		t.Fatalf("pushes %d operations %d", f.Pushes(), f.Operations())
	}
	if got, ok := f.Operation("pay_1"); !ok || got.Status != provider.StatusSuccess {
		t.Fatalf("Operation = %+v, %v", got, ok)
	}
}

func TestScriptedFailure(t *testing.T) {
	f := fakeupstream.New(t, fakeupstream.Options{})
	f.Script("+255700000001", fakeupstream.Scenario{Outcome: provider.StatusFailed, Code: paygatev1.FailureInsufficientFunds})
	f.Script("+255700000002", fakeupstream.Scenario{Outcome: provider.StatusFailed})
	up := adapter(t, f, time.Second)
	ctx := context.Background()

	res, err := up.Push(ctx, push("pay_1", "+255700000001", ""))
	mustStatus(t, res, err, provider.StatusFailed)
	if res.Code != paygatev1.FailureInsufficientFunds {
		t.Fatalf("code %q", res.Code)
	}
	res, err = up.PushStatus(ctx, provider.PushRequest{Reference: "pay_1"})
	mustStatus(t, res, err, provider.StatusFailed)
	res, err = up.Push(ctx, push("pay_2", "+255700000002", ""))
	mustStatus(t, res, err, provider.StatusFailed)
	if res.Code != paygatev1.FailurePaymentDeclined {
		t.Fatalf("default code %q", res.Code)
	}
	// Unscripted numbers still succeed.
	res, err = up.Push(ctx, push("pay_3", "+255700000003", ""))
	mustStatus(t, res, err, provider.StatusSuccess)
}

func TestInvalidRequestIsRejected(t *testing.T) {
	f := fakeupstream.New(t, fakeupstream.Options{})
	up := adapter(t, f, time.Second)
	res, err := up.Push(context.Background(), push("pay_1", "0712345678", ""))
	mustStatus(t, res, err, provider.StatusFailed)
	if res.Code != paygatev1.FailureInvalidAccount {
		t.Fatalf("code %q", res.Code)
	}
	if f.Operations() != 0 || f.Pushes() != 1 {
		t.Fatalf("operations %d pushes %d", f.Operations(), f.Pushes())
	}
}

func TestDelayedSettlementWithInjectedClock(t *testing.T) {
	clock := newFakeClock()
	f := fakeupstream.New(t, fakeupstream.Options{Clock: clock.Now})
	f.Script("+255700000010", fakeupstream.Scenario{Outcome: provider.StatusFailed, Code: paygatev1.FailureCustomerCancelled, SettleAfter: 30 * time.Second})
	f.Script("+255700000011", fakeupstream.Scenario{Outcome: provider.StatusPending})
	up := adapter(t, f, time.Second)
	ctx := context.Background()

	res, err := up.Push(ctx, push("pay_1", "+255700000010", ""))
	mustStatus(t, res, err, provider.StatusPending)
	res, err = up.PushStatus(ctx, provider.PushRequest{Reference: "pay_1"})
	mustStatus(t, res, err, provider.StatusPending)
	clock.Step(29 * time.Second)
	res, err = up.PushStatus(ctx, provider.PushRequest{Reference: "pay_1"})
	mustStatus(t, res, err, provider.StatusPending)
	clock.Step(time.Second)
	res, err = up.PushStatus(ctx, provider.PushRequest{Reference: "pay_1"})
	mustStatus(t, res, err, provider.StatusFailed)
	if res.Code != paygatev1.FailureCustomerCancelled {
		t.Fatalf("code %q", res.Code)
	}

	// PENDING never resolves.
	res, err = up.Push(ctx, push("pay_2", "+255700000011", ""))
	mustStatus(t, res, err, provider.StatusPending)
	clock.Step(240 * time.Hour)
	res, err = up.PushStatus(ctx, provider.PushRequest{Reference: "pay_2"})
	mustStatus(t, res, err, provider.StatusPending)
}

func TestAmbiguousThenSuccess(t *testing.T) {
	clock := newFakeClock()
	f := fakeupstream.New(t, fakeupstream.Options{Clock: clock.Now})
	f.Script("+255700000020", fakeupstream.Scenario{AmbiguousFor: 2})
	f.Script("+255700000021", fakeupstream.Scenario{AmbiguousFor: 1, SettleAfter: time.Minute})
	up := adapter(t, f, time.Second)
	ctx := context.Background()

	res, err := up.Push(ctx, push("pay_1", "+255700000020", ""))
	mustStatus(t, res, err, provider.StatusAmbiguous)
	if got, _ := f.Operation("pay_1"); got.Status != provider.StatusAmbiguous {
		t.Fatalf("Operation %+v", got) // inspection does not consume
	}
	for i := range 2 {
		res, err = up.PushStatus(ctx, provider.PushRequest{Reference: "pay_1"})
		if err != nil || res.Status != provider.StatusAmbiguous {
			t.Fatalf("query %d: %+v %v", i, res, err)
		}
	}
	res, err = up.PushStatus(ctx, provider.PushRequest{Reference: "pay_1"})
	mustStatus(t, res, err, provider.StatusSuccess)

	// Queries before settlement do not count against AmbiguousFor.
	res, err = up.Push(ctx, push("pay_2", "+255700000021", ""))
	mustStatus(t, res, err, provider.StatusPending)
	res, err = up.PushStatus(ctx, provider.PushRequest{Reference: "pay_2"})
	mustStatus(t, res, err, provider.StatusPending)
	clock.Step(time.Minute)
	res, err = up.PushStatus(ctx, provider.PushRequest{Reference: "pay_2"})
	mustStatus(t, res, err, provider.StatusAmbiguous)
	res, err = up.PushStatus(ctx, provider.PushRequest{Reference: "pay_2"})
	mustStatus(t, res, err, provider.StatusSuccess)
}

func TestRepeatedPostPushesOnce(t *testing.T) {
	f := fakeupstream.New(t, fakeupstream.Options{})
	up := adapter(t, f, time.Second)
	ctx := context.Background()

	first, err := up.Push(ctx, push("pay_1", "+255712345678", ""))
	mustStatus(t, first, err, provider.StatusSuccess)
	second, err := up.Push(ctx, push("pay_1", "+255712345678", ""))
	mustStatus(t, second, err, provider.StatusSuccess)
	if first.ProviderReference != second.ProviderReference {
		t.Fatalf("second push created a new operation: %s vs %s", first.ProviderReference, second.ProviderReference)
	}
	if f.Operations() != 1 || f.Pushes() != 2 || f.PushesFor("pay_1") != 2 {
		t.Fatalf("operations %d pushes %d pushesFor %d", f.Operations(), f.Pushes(), f.PushesFor("pay_1"))
	}

	// Same reference, different request: refused, outcome unknown to the adapter; nothing new.
	other := push("pay_1", "+255712345678", "")
	other.Amount = "9999.00"
	if res, err := up.Push(ctx, other); err == nil {
		t.Fatalf("conflicting reuse accepted: %+v", res)
	}
	if f.Operations() != 1 {
		t.Fatalf("operations %d", f.Operations())
	}
}

func TestLostPostAnswerThenStatusQueryFindsIt(t *testing.T) {
	f := fakeupstream.New(t, fakeupstream.Options{})
	f.Script("+255700000030", fakeupstream.Scenario{PostError: http.StatusInternalServerError})
	f.Script("+255700000031", fakeupstream.Scenario{DropPostConnection: true})
	f.Script("+255700000032", fakeupstream.Scenario{PostLatency: 300 * time.Millisecond})
	up := adapter(t, f, 100*time.Millisecond)
	ctx := context.Background()

	for _, tc := range []struct{ ref, phone string }{
		{"pay_500", "+255700000030"},
		{"pay_drop", "+255700000031"},
		{"pay_slow", "+255700000032"},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			res, err := up.Push(ctx, push(tc.ref, tc.phone, ""))
			if err == nil {
				t.Fatalf("want an error (answer lost), got %+v", res)
			}
			if errors.Is(err, provider.ErrNotFound) {
				t.Fatalf("lost answer reported as not found: %v", err)
			}
			// Written ahead (docs/payments.md): ask, don't push again.
			res, err = up.PushStatus(ctx, provider.PushRequest{Reference: tc.ref})
			mustStatus(t, res, err, provider.StatusSuccess)
			if f.PushesFor(tc.ref) != 1 {
				t.Fatalf("pushes for %s: %d", tc.ref, f.PushesFor(tc.ref))
			}
		})
	}
	if f.Operations() != 3 {
		t.Fatalf("operations %d", f.Operations())
	}

	// A repeated POST after a lost answer answers normally with the existing operation.
	res, err := up.Push(ctx, push("pay_500", "+255700000030", ""))
	mustStatus(t, res, err, provider.StatusSuccess)
	if f.Operations() != 3 || f.PushesFor("pay_500") != 2 {
		t.Fatalf("operations %d pushesFor %d", f.Operations(), f.PushesFor("pay_500"))
	}
}

func TestFailRecoverAndLatency(t *testing.T) {
	f := fakeupstream.New(t, fakeupstream.Options{})
	up := adapter(t, f, 100*time.Millisecond)
	ctx := context.Background()

	f.Fail(http.StatusServiceUnavailable)
	if res, err := up.Push(ctx, push("pay_1", "+255712345678", "")); err == nil {
		t.Fatalf("Fail: got %+v", res)
	}
	if _, err := up.PushStatus(ctx, provider.PushRequest{Reference: "pay_1"}); err == nil || errors.Is(err, provider.ErrNotFound) {
		t.Fatalf("Fail: status query %v", err)
	}
	if f.Operations() != 0 || f.Pushes() != 0 {
		t.Fatalf("a failing fake recorded something: operations %d pushes %d", f.Operations(), f.Pushes())
	}
	f.Recover()
	res, err := up.Push(ctx, push("pay_1", "+255712345678", ""))
	mustStatus(t, res, err, provider.StatusSuccess)

	f.SetLatency(300 * time.Millisecond)
	if _, err := up.PushStatus(ctx, provider.PushRequest{Reference: "pay_1"}); err == nil {
		t.Fatal("latency beyond the timeout: want an error")
	}
	f.SetLatency(10 * time.Millisecond)
	res, err = up.PushStatus(ctx, provider.PushRequest{Reference: "pay_1"})
	mustStatus(t, res, err, provider.StatusSuccess)
}

func TestBadTokenIs401(t *testing.T) {
	f := fakeupstream.New(t, fakeupstream.Options{Token: "right-token"})
	if f.Token != "right-token" {
		t.Fatalf("Token %q", f.Token)
	}
	up, err := provider.NewUpstream(provider.UpstreamConfig{BaseURL: f.URL(), Token: "wrong-token", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = up.Push(context.Background(), push("pay_1", "+255712345678", ""))
	var ue *provider.UpstreamError
	if !errors.As(err, &ue) || ue.StatusCode != http.StatusUnauthorized || !ue.Unauthorized() {
		t.Fatalf("err = %v, want a 401 UpstreamError", err)
	}
	if f.Pushes() != 0 || f.Operations() != 0 {
		t.Fatalf("unauthenticated push counted: pushes %d operations %d", f.Pushes(), f.Operations())
	}
	// No Authorization header at all.
	resp, err := http.Get(f.URL() + "/v1/collections/pay_1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: HTTP %d", resp.StatusCode)
	}
}

func TestDisbursements(t *testing.T) {
	clock := newFakeClock()
	f := fakeupstream.New(t, fakeupstream.Options{Clock: clock.Now})
	f.Script("+255700000040", fakeupstream.Scenario{Outcome: provider.StatusAmbiguous})
	up := adapter(t, f, time.Second)
	ctx := context.Background()
	req := provider.DisbursementRequest{Reference: "po_1", Phone: "+255712345678", Amount: "2500.00", Currency: "TZS", Gateway: "MPESA_TZ"}
	res, err := up.Disburse(ctx, req)
	mustStatus(t, res, err, provider.StatusSuccess)
	res, err = up.Disburse(ctx, req)
	mustStatus(t, res, err, provider.StatusSuccess)
	res, err = up.DisbursementStatus(ctx, provider.DisbursementRequest{Reference: "po_1"})
	mustStatus(t, res, err, provider.StatusSuccess)
	if _, err := up.PushStatus(ctx, provider.PushRequest{Reference: "po_1"}); err != provider.ErrNotFound {
		t.Fatalf("a disbursement is not a collection: %v", err)
	}
	req.Reference, req.Phone = "po_2", "+255700000040"
	res, err = up.Disburse(ctx, req)
	mustStatus(t, res, err, provider.StatusAmbiguous)
	clock.Step(time.Hour)
	res, err = up.DisbursementStatus(ctx, provider.DisbursementRequest{Reference: "po_2"})
	mustStatus(t, res, err, provider.StatusAmbiguous)
	if f.Disbursements() != 3 || f.DisbursementsFor("po_1") != 2 || f.Operations() != 2 || f.Pushes() != 0 {
		t.Fatalf("disbursements %d operations %d pushes %d", f.Disbursements(), f.Operations(), f.Pushes())
	}
}

// receiver is an httptest callback endpoint that verifies every callback with ParseCallback.
type receiver struct {
	t      *testing.T
	secret []byte
	clock  func() time.Time
	srv    *httptest.Server
	got    chan provider.Callback
}

func newReceiver(t *testing.T, secret []byte, clock func() time.Time) *receiver {
	r := &receiver{t: t, secret: secret, clock: clock, got: make(chan provider.Callback, 16)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(req.Body, provider.MaxCallbackBody+1))
		cb, err := provider.ParseCallback(r.secret, req.Header.Get(provider.CallbackSignatureHeader),
			req.Header.Get(provider.CallbackTimestampHeader), body, r.clock(), time.Minute)
		if err != nil {
			t.Errorf("callback rejected: %v", err)
			http.Error(w, "bad callback", http.StatusUnauthorized)
			return
		}
		r.got <- cb
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) next() provider.Callback {
	r.t.Helper()
	select {
	case cb := <-r.got:
		return cb
	case <-time.After(5 * time.Second):
		r.t.Fatal("no callback arrived")
		return provider.Callback{}
	}
}

func (r *receiver) none(d time.Duration) {
	r.t.Helper()
	select {
	case cb := <-r.got:
		r.t.Fatalf("unexpected callback %+v", cb)
	case <-time.After(d):
	}
}

func TestCallbacks(t *testing.T) {
	secret := []byte("callback-secret")
	clock := newFakeClock()
	f := fakeupstream.New(t, fakeupstream.Options{CallbackSecret: secret, Clock: clock.Now})
	rcv := newReceiver(t, secret, clock.Now)
	up := adapter(t, f, time.Second)
	ctx := context.Background()

	t.Run("immediate with duplicates", func(t *testing.T) {
		f.Script("+255700000050", fakeupstream.Scenario{Outcome: provider.StatusFailed, Code: paygatev1.FailureInsufficientFunds, Callback: true, DuplicateCallbacks: 1, CallbackDelay: 10 * time.Millisecond})
		res, err := up.Push(ctx, push("pay_cb1", "+255700000050", rcv.srv.URL+"/cb"))
		mustStatus(t, res, err, provider.StatusFailed)
		for range 2 {
			cb := rcv.next()
			want := provider.Callback{Reference: "pay_cb1", ProviderReference: res.ProviderReference, Status: provider.StatusFailed, Code: paygatev1.FailureInsufficientFunds, Message: cb.Message, Kind: provider.CallbackKindCollection}
			if cb != want {
				t.Fatalf("callback %+v, want %+v", cb, want)
			}
		}
		rcv.none(50 * time.Millisecond)
		// A late resend on demand.
		f.SendCallback("pay_cb1")
		if cb := rcv.next(); cb.Reference != "pay_cb1" || cb.Status != provider.StatusFailed {
			t.Fatalf("resent callback %+v", cb)
		}
	})

	t.Run("settlement observed by a status query", func(t *testing.T) {
		// SettleAfter is long in real time, so only the status query after the clock moves sends it.
		f.Script("+255700000051", fakeupstream.Scenario{SettleAfter: time.Hour, Callback: true})
		res, err := up.Push(ctx, push("pay_cb2", "+255700000051", rcv.srv.URL+"/cb"))
		mustStatus(t, res, err, provider.StatusPending)
		rcv.none(50 * time.Millisecond)
		clock.Step(time.Hour)
		res, err = up.PushStatus(ctx, provider.PushRequest{Reference: "pay_cb2"})
		mustStatus(t, res, err, provider.StatusSuccess)
		if cb := rcv.next(); cb.Reference != "pay_cb2" || cb.Status != provider.StatusSuccess {
			t.Fatalf("callback %+v", cb)
		}
		// Observed once: more queries do not send it again.
		res, err = up.PushStatus(ctx, provider.PushRequest{Reference: "pay_cb2"})
		mustStatus(t, res, err, provider.StatusSuccess)
		rcv.none(50 * time.Millisecond)
	})

	t.Run("settlement after real time, disbursement", func(t *testing.T) {
		f.Script("+255700000052", fakeupstream.Scenario{SettleAfter: 30 * time.Millisecond, Callback: true})
		res, err := up.Disburse(ctx, provider.DisbursementRequest{Reference: "po_cb3", Phone: "+255700000052", Amount: "10.00", Currency: "TZS", Gateway: "MPESA_TZ", CallbackURL: rcv.srv.URL + "/cb"})
		mustStatus(t, res, err, provider.StatusPending)
		cb := rcv.next()
		if cb.Reference != "po_cb3" || cb.Status != provider.StatusSuccess || cb.Kind != provider.CallbackKindDisbursement {
			t.Fatalf("callback %+v", cb)
		}
		rcv.none(50 * time.Millisecond)
	})

	t.Run("no callback without Callback or for PENDING", func(t *testing.T) {
		f.Script("+255700000053", fakeupstream.Scenario{Outcome: provider.StatusPending, Callback: true})
		res, err := up.Push(ctx, push("pay_cb4", "+255700000053", rcv.srv.URL+"/cb"))
		mustStatus(t, res, err, provider.StatusPending)
		res, err = up.Push(ctx, push("pay_cb5", "+255712345678", rcv.srv.URL+"/cb"))
		mustStatus(t, res, err, provider.StatusSuccess)
		rcv.none(100 * time.Millisecond)
	})

	// The fake counts a delivery once the receiver's answer is back: wait for it.
	eventually(t, func() bool { return f.CallbacksDelivered() == 5 })
	if f.CallbacksFailed() != 0 {
		t.Fatalf("failed callbacks %d", f.CallbacksFailed())
	}
}

func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCallbackSignedWithOtherSecretIsRejected(t *testing.T) {
	f := fakeupstream.New(t, fakeupstream.Options{}) // random secret
	got := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		_, err := provider.ParseCallback([]byte("not-the-secret"), req.Header.Get(provider.CallbackSignatureHeader),
			req.Header.Get(provider.CallbackTimestampHeader), body, time.Now(), time.Minute)
		got <- err
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	f.Script("+255700000060", fakeupstream.Scenario{Callback: true})
	up := adapter(t, f, time.Second)
	res, err := up.Push(context.Background(), push("pay_1", "+255700000060", srv.URL))
	mustStatus(t, res, err, provider.StatusSuccess)
	select {
	case err := <-got:
		if !errors.Is(err, provider.ErrCallbackSignature) {
			t.Fatalf("err = %v, want ErrCallbackSignature", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no callback")
	}
	eventually(t, func() bool { return f.CallbacksFailed() == 1 })
	if f.CallbacksDelivered() != 0 {
		t.Fatalf("failed %d delivered %d", f.CallbacksFailed(), f.CallbacksDelivered())
	}
}

func TestNotFoundAfterAccepting(t *testing.T) {
	clock := newFakeClock()
	f := fakeupstream.New(t, fakeupstream.Options{Clock: clock.Now})
	f.Script("+255700000020", fakeupstream.Scenario{NotFoundQueries: 2, AmbiguousFor: 1})
	f.Script("+255700000021", fakeupstream.Scenario{NotFoundFor: 10 * time.Second, SettleAfter: time.Second, Outcome: provider.StatusFailed})
	up := adapter(t, f, time.Second)
	ctx := context.Background()

	// The first two queries do not see it; the POST answered, and a repeat is de-duplicated.
	res, err := up.Push(ctx, push("pay_q", "+255700000020", ""))
	mustStatus(t, res, err, provider.StatusAmbiguous)
	for i := range 2 {
		if _, err := up.PushStatus(ctx, provider.PushRequest{Reference: "pay_q"}); !errors.Is(err, provider.ErrNotFound) {
			t.Fatalf("query %d: %v, want ErrNotFound", i+1, err)
		}
	}
	res, err = up.Push(ctx, push("pay_q", "+255700000020", ""))
	mustStatus(t, res, err, provider.StatusAmbiguous)
	if got, ok := f.Truth("pay_q"); !ok || got.Status != provider.StatusSuccess {
		t.Fatalf("Truth = %+v, %v", got, ok)
	}
	// AmbiguousFor counts from the first query that sees the operation.
	res, err = up.PushStatus(ctx, provider.PushRequest{Reference: "pay_q"})
	mustStatus(t, res, err, provider.StatusAmbiguous)
	res, err = up.PushStatus(ctx, provider.PushRequest{Reference: "pay_q"})
	mustStatus(t, res, err, provider.StatusSuccess)
	if f.PushesFor("pay_q") != 2 || f.OperationsFor("pay_q") != 1 || len(f.PostTimes("pay_q")) != 2 {
		t.Fatalf("pushes %d, operations %d, post times %v", f.PushesFor("pay_q"), f.OperationsFor("pay_q"), f.PostTimes("pay_q"))
	}

	// Hidden for 10 s by the clock, however often it is asked; settled (failed) after 1 s.
	res, err = up.Disburse(ctx, provider.DisbursementRequest{Reference: "po_t", Phone: "+255700000021", Amount: "1000", Currency: "TZS", Gateway: "MPESA_TZ"})
	mustStatus(t, res, err, provider.StatusPending)
	for range 5 {
		if _, err := up.DisbursementStatus(ctx, provider.DisbursementRequest{Reference: "po_t"}); !errors.Is(err, provider.ErrNotFound) {
			t.Fatalf("hidden disbursement: %v, want ErrNotFound", err)
		}
	}
	clock.Step(2 * time.Second)
	if got, _ := f.Truth("po_t"); got.Status != provider.StatusFailed {
		t.Fatalf("Truth after settling = %+v", got)
	}
	if _, err := up.DisbursementStatus(ctx, provider.DisbursementRequest{Reference: "po_t"}); !errors.Is(err, provider.ErrNotFound) {
		t.Fatalf("still hidden: %v, want ErrNotFound", err)
	}
	clock.Step(8 * time.Second)
	res, err = up.DisbursementStatus(ctx, provider.DisbursementRequest{Reference: "po_t"})
	mustStatus(t, res, err, provider.StatusFailed)
}

func TestForgetKeepsTheTruth(t *testing.T) {
	f := fakeupstream.New(t, fakeupstream.Options{})
	up := adapter(t, f, time.Second)
	ctx := context.Background()
	res, err := up.Push(ctx, push("pay_f", "+255712345678", ""))
	mustStatus(t, res, err, provider.StatusSuccess)

	if f.ForgetIf(func(holds func(string) bool) bool { return !holds("pay_f") }) || f.Forgets() != 0 {
		t.Fatal("ForgetIf forgot though told not to")
	}
	if !f.ForgetIf(func(holds func(string) bool) bool { return !holds("pay_other") }) || f.Forgets() != 1 {
		t.Fatal("ForgetIf did not forget")
	}
	if _, err := up.PushStatus(ctx, provider.PushRequest{Reference: "pay_f"}); !errors.Is(err, provider.ErrNotFound) {
		t.Fatalf("forgotten: %v, want ErrNotFound", err)
	}
	if _, ok := f.Operation("pay_f"); ok {
		t.Fatal("Operation still answers a forgotten operation")
	}
	if got, ok := f.Truth("pay_f"); !ok || got.Status != provider.StatusSuccess || got.ProviderReference != res.ProviderReference {
		t.Fatalf("Truth of a forgotten operation = %+v, %v", got, ok)
	}
	// A provider that forgot does not de-duplicate: the same reference again is a second operation.
	_, err = up.Push(ctx, push("pay_f", "+255712345678", ""))
	mustStatus(t, res, err, provider.StatusSuccess)
	if n := f.OperationsFor("pay_f"); n != 2 {
		t.Fatalf("OperationsFor = %d, want 2", n)
	}
	if _, ok := f.Truth("pay_never"); ok || f.OperationsFor("pay_never") != 0 {
		t.Fatal("Truth of a reference never sent")
	}
}
