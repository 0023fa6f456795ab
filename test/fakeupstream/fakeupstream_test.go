// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package fakeupstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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

func refund(ref, collection, phone, amount string) provider.RefundRequest {
	return provider.RefundRequest{Reference: ref, Payment: collection, Phone: phone, Amount: amount, Currency: "TZS", Gateway: "MPESA_TZ"}
}

func mustFail(t *testing.T, got provider.Result, err error, code paygatev1.FailureCode) {
	t.Helper()
	mustStatus(t, got, err, provider.StatusFailed)
	if got.Code != code {
		t.Fatalf("code %q, want %q (%+v)", got.Code, code, got)
	}
}

// TestRefunds drives the adapter's Refunder over HTTP against the fake: partial refunds up to the
// collection's amount, one refund per reference, refusals the provider answers 422, and the
// collections the fake does not know.
func TestRefunds(t *testing.T) {
	clock := newFakeClock()
	f := fakeupstream.New(t, fakeupstream.Options{Clock: clock.Now})
	up := adapter(t, f, time.Second)
	ctx := context.Background()
	const phone = "+255712345678"
	res, err := up.Push(ctx, push("shop.trx-1.1", phone, ""))
	mustStatus(t, res, err, provider.StatusSuccess)

	// Two partial refunds, the second of all that is left; the first sent twice.
	r1 := refund("shop.rf-1.r", "shop.trx-1.1", phone, "500.00")
	r1.PaymentProvider = res.ProviderReference
	first, err := up.Refund(ctx, r1)
	mustStatus(t, first, err, provider.StatusSuccess)
	again, err := up.Refund(ctx, r1)
	mustStatus(t, again, err, provider.StatusSuccess)
	if first.ProviderReference == "" || again.ProviderReference != first.ProviderReference {
		t.Fatalf("provider references %q and %q", first.ProviderReference, again.ProviderReference)
	}
	st, err := up.RefundStatus(ctx, provider.RefundRequest{Reference: "shop.rf-1.r"})
	mustStatus(t, st, err, provider.StatusSuccess)
	res, err = up.Refund(ctx, refund("shop.rf-2.r", "shop.trx-1.1", phone, "1000"))
	mustStatus(t, res, err, provider.StatusSuccess)

	// Nothing is left: refused, and not recorded.
	res, err = up.Refund(ctx, refund("shop.rf-3.r", "shop.trx-1.1", phone, "0.01"))
	mustFail(t, res, err, provider.UpstreamRefundExceedsPayment)
	if _, err := up.RefundStatus(ctx, provider.RefundRequest{Reference: "shop.rf-3.r"}); !errors.Is(err, provider.ErrNotFound) {
		t.Fatalf("status of a refused refund: %v, want ErrNotFound", err)
	}
	// Refunds are their own namespace.
	if _, err := up.PushStatus(ctx, provider.PushRequest{Reference: "shop.rf-1.r"}); !errors.Is(err, provider.ErrNotFound) {
		t.Fatalf("a refund is not a collection: %v", err)
	}
	if _, err := up.RefundStatus(ctx, provider.RefundRequest{Reference: "shop.trx-1.1"}); !errors.Is(err, provider.ErrNotFound) {
		t.Fatalf("a collection is not a refund: %v", err)
	}
	if f.Refunds() != 4 || f.RefundsFor("shop.rf-1.r") != 2 || f.OperationsFor("shop.rf-1.r") != 1 || f.OperationsFor("shop.rf-3.r") != 0 ||
		f.Operations() != 3 || f.Pushes() != 1 {
		t.Fatalf("refunds %d (rf-1: %d posts, %d operations), operations %d, pushes %d",
			f.Refunds(), f.RefundsFor("shop.rf-1.r"), f.OperationsFor("shop.rf-1.r"), f.Operations(), f.Pushes())
	}
	if got, ok := f.Operation("shop.rf-2.r"); !ok || got.Status != provider.StatusSuccess {
		t.Fatalf("Operation = %+v, %v", got, ok)
	}
	// The same reference for another collection, amount or number is a Paygate bug.
	other := r1
	other.Amount = "400.00"
	if _, err := up.Refund(ctx, other); err == nil {
		t.Fatal("a reused reference with another amount was accepted")
	}

	// A collection that did not succeed, or that has not settled yet, is not refundable.
	f.Script("+255700000070", fakeupstream.Scenario{Outcome: provider.StatusFailed})
	f.Script("+255700000071", fakeupstream.Scenario{SettleAfter: time.Minute})
	res, err = up.Push(ctx, push("shop.trx-2.1", "+255700000070", ""))
	mustStatus(t, res, err, provider.StatusFailed)
	res, err = up.Refund(ctx, refund("shop.rf-4.r", "shop.trx-2.1", "+255700000070", "1"))
	mustFail(t, res, err, provider.UpstreamPaymentNotRefundable)
	res, err = up.Push(ctx, push("shop.trx-3.1", "+255700000071", ""))
	mustStatus(t, res, err, provider.StatusPending)
	res, err = up.Refund(ctx, refund("shop.rf-5.r", "shop.trx-3.1", "+255700000071", "1"))
	mustFail(t, res, err, provider.UpstreamPaymentNotRefundable)
	clock.Step(time.Minute)
	res, err = up.Refund(ctx, refund("shop.rf-5.r", "shop.trx-3.1", "+255700000071", "1500.00"))
	mustStatus(t, res, err, provider.StatusSuccess)

	// Another currency than the collection's is an invalid request.
	r := refund("shop.rf-6.r", "shop.trx-1.1", phone, "1")
	r.Currency = "KES"
	res, err = up.Refund(ctx, r)
	mustFail(t, res, err, "INVALID_REQUEST")

	// A collection the fake does not know (made elsewhere, or forgotten) cannot be checked: any
	// amount is accepted.
	res, err = up.Refund(ctx, refund("shop.rf-7.r", "elsewhere.trx-9.1", phone, "999999"))
	mustStatus(t, res, err, provider.StatusSuccess)
}

// TestRefundFaults: refunds follow ScriptRefunds (not Script), a failed refund gives its amount
// back to the collection, and a refund whose answer was lost is found by status query and
// de-duplicated.
func TestRefundFaults(t *testing.T) {
	clock := newFakeClock()
	f := fakeupstream.New(t, fakeupstream.Options{Clock: clock.Now})
	up := adapter(t, f, time.Second)
	ctx := context.Background()
	const phone = "+255700000080"
	f.Script(phone, fakeupstream.Scenario{SettleAfter: time.Second})
	res, err := up.Push(ctx, push("shop.trx-1.1", phone, ""))
	mustStatus(t, res, err, provider.StatusPending)
	clock.Step(time.Second)

	f.ScriptRefunds(phone, fakeupstream.Scenario{Outcome: provider.StatusFailed, Code: paygatev1.FailureInvalidAccount, SettleAfter: time.Minute})
	res, err = up.Refund(ctx, refund("shop.rf-1.r", "shop.trx-1.1", phone, "1500.00"))
	mustStatus(t, res, err, provider.StatusPending)
	// Until it fails, its amount is taken.
	f.ScriptRefunds(phone, fakeupstream.Scenario{PostError: http.StatusBadGateway})
	if res, err := up.Refund(ctx, refund("shop.rf-2.r", "shop.trx-1.1", phone, "1500.00")); err != nil || res.Code != provider.UpstreamRefundExceedsPayment {
		t.Fatalf("refund beyond what an unsettled refund leaves = %+v, %v", res, err)
	}
	clock.Step(time.Minute)
	st, err := up.RefundStatus(ctx, provider.RefundRequest{Reference: "shop.rf-1.r"})
	mustFail(t, st, err, paygatev1.FailureInvalidAccount)

	// The answer is lost (502) after the fake recorded the refund: an error, then the status
	// query finds it and a repeat is answered without a second refund.
	if res, err := up.Refund(ctx, refund("shop.rf-2.r", "shop.trx-1.1", phone, "1500.00")); err == nil {
		t.Fatalf("lost answer gave %+v", res)
	}
	st, err = up.RefundStatus(ctx, provider.RefundRequest{Reference: "shop.rf-2.r"})
	mustStatus(t, st, err, provider.StatusSuccess)
	res, err = up.Refund(ctx, refund("shop.rf-2.r", "shop.trx-1.1", phone, "1500.00"))
	mustStatus(t, res, err, provider.StatusSuccess)
	// Three POSTs: the refused one, the one whose answer was lost, the repeat.
	if f.RefundsFor("shop.rf-2.r") != 3 || f.OperationsFor("shop.rf-2.r") != 1 {
		t.Fatalf("posts %d, operations %d", f.RefundsFor("shop.rf-2.r"), f.OperationsFor("shop.rf-2.r"))
	}
	if got, ok := f.Truth("shop.rf-2.r"); !ok || got.Status != provider.StatusSuccess {
		t.Fatalf("Truth = %+v, %v", got, ok)
	}

	// Fail answers every request and records nothing.
	f.Fail(http.StatusServiceUnavailable)
	if _, err := up.Refund(ctx, refund("shop.rf-3.r", "shop.trx-1.1", phone, "1")); err == nil {
		t.Fatal("Fail did not fail the refund")
	}
	f.Recover()
	if _, err := up.RefundStatus(ctx, provider.RefundRequest{Reference: "shop.rf-3.r"}); !errors.Is(err, provider.ErrNotFound) {
		t.Fatalf("refund recorded under Fail: %v", err)
	}

	// Forget drops refunds too; a repeat then refunds again (the fake no longer knows the
	// collection either, so it cannot refuse).
	f.Forget()
	if _, err := up.RefundStatus(ctx, provider.RefundRequest{Reference: "shop.rf-2.r"}); !errors.Is(err, provider.ErrNotFound) {
		t.Fatalf("forgotten refund: %v", err)
	}
	f.ScriptRefunds(phone, fakeupstream.Scenario{})
	res, err = up.Refund(ctx, refund("shop.rf-2.r", "shop.trx-1.1", phone, "1500.00"))
	mustStatus(t, res, err, provider.StatusSuccess)
	if f.OperationsFor("shop.rf-2.r") != 2 {
		t.Fatalf("operations %d, want 2", f.OperationsFor("shop.rf-2.r"))
	}
}

// TestRefundCallbacks: a refund's callback is signed like the others and carries kind "refund".
func TestRefundCallbacks(t *testing.T) {
	secret := []byte("callback-secret")
	f := fakeupstream.New(t, fakeupstream.Options{CallbackSecret: secret})
	type signed struct {
		body           map[string]any
		signature, sig string
	}
	got := make(chan signed, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		got <- signed{m, req.Header.Get(provider.CallbackSignatureHeader), provider.SignCallback(secret, req.Header.Get(provider.CallbackTimestampHeader), body)}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	up := adapter(t, f, time.Second)
	ctx := context.Background()
	const phone = "+255700000090"
	res, err := up.Push(ctx, push("shop.trx-1.1", phone, ""))
	mustStatus(t, res, err, provider.StatusSuccess)
	f.ScriptRefunds(phone, fakeupstream.Scenario{SettleAfter: 20 * time.Millisecond, Callback: true})
	r := refund("shop.rf-1.r", "shop.trx-1.1", phone, "700")
	r.CallbackURL = srv.URL + "/cb"
	res, err = up.Refund(ctx, r)
	mustStatus(t, res, err, provider.StatusPending)
	select {
	case cb := <-got:
		if cb.signature != cb.sig || cb.body["kind"] != "refund" || cb.body["reference"] != "shop.rf-1.r" ||
			cb.body["status"] != provider.UpstreamSuccess || cb.body["provider_reference"] != res.ProviderReference {
			t.Fatalf("refund callback %+v", cb)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no refund callback")
	}
	eventually(t, func() bool { return f.CallbacksDelivered() == 1 })
}

// TestRefundRequiresTheCollection: the fake refuses a refund body without collection_reference.
func TestRefundRequiresTheCollection(t *testing.T) {
	f := fakeupstream.New(t, fakeupstream.Options{})
	req, _ := http.NewRequest(http.MethodPost, f.URL()+"/v1/refunds",
		strings.NewReader(`{"reference":"shop.rf-1.r","msisdn":"+255712345678","amount":"1","currency":"TZS","gateway":"MPESA_TZ"}`))
	req.Header.Set("Authorization", "Bearer "+f.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct{ Code string }
	_ = json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != http.StatusBadRequest || e.Code != "INVALID_REQUEST" || f.Refunds() != 1 || f.Operations() != 0 {
		t.Fatalf("HTTP %d %q, refunds %d, operations %d", resp.StatusCode, e.Code, f.Refunds(), f.Operations())
	}
}
