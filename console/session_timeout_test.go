// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/consoleauth"
	"github.com/paygate/paygate/internal/kube"
)

// TestSessionTimeouts: a session ends when it has been idle longer than its idle timeout (counted
// from its creation, then from the last use recorded), and at its absolute expiry however recently
// it was used; an ended session is deleted, so it ends on every replica. The fake client leaves
// creationTimestamp as given, so the session's age is set by hand and the clock is a fake one.
func TestSessionTimeouts(t *testing.T) {
	created := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	const token = "shop-ns.a-session-token-for-the-timeout-test"
	for _, tc := range []struct {
		name     string
		lastSeen time.Duration // after creation; 0: never recorded
		now      time.Duration // after creation
		signedIn bool
	}{
		{name: "fresh", now: time.Minute, signedIn: true},
		{name: "idle just under the timeout since creation", now: DefaultIdleTimeout - time.Second, signedIn: true},
		{name: "idle past the timeout since creation", now: DefaultIdleTimeout + time.Second},
		{name: "used recently, long after creation", lastSeen: 3 * time.Hour, now: 3*time.Hour + DefaultIdleTimeout - time.Second, signedIn: true},
		{name: "idle past the timeout since its last use", lastSeen: 3 * time.Hour, now: 3*time.Hour + DefaultIdleTimeout + time.Second},
		{name: "used a minute ago, but past its absolute expiry", lastSeen: DefaultAbsoluteTimeout - time.Minute, now: DefaultAbsoluteTimeout},
		{name: "used a minute ago, a second before its absolute expiry", lastSeen: DefaultAbsoluteTimeout - time.Minute,
			now: DefaultAbsoluteTimeout - time.Second, signedIn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &paygatev1.ConsoleSession{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop-ns", Name: paygatev1.ConsoleSessionName(consoleauth.TokenID(token)),
					CreationTimestamp: metav1.NewTime(created)},
				Spec: paygatev1.ConsoleSessionSpec{User: paygatev1.ConsoleUserName("owner@shop.example"), Method: paygatev1.ConsoleSignInPassword,
					Expires: metav1.NewTime(created.Add(DefaultAbsoluteTimeout)), IdleTimeoutSeconds: int32(DefaultIdleTimeout / time.Second)},
			}
			if tc.lastSeen > 0 {
				s.Status.LastSeen = &metav1.Time{Time: created.Add(tc.lastSeen)}
			}
			cl := fake.NewClientBuilder().WithScheme(kube.Scheme()).
				WithObjects(merchant("shop-ns", "shop"), consoleUser("shop-ns", "shop", "owner@shop.example", paygatev1.ConsoleOwner, false), s).
				WithStatusSubresource(&paygatev1.ConsoleUser{}, &paygatev1.ConsoleSession{}).Build()
			clk := clocktesting.NewFakePassiveClock(created.Add(tc.now))
			c := New(Options{Cache: cl, APIReader: cl, Writer: cl, Clock: clk, PublicURL: "http://console.test"})
			r := httptest.NewRequest(http.MethodGet, "http://console.test"+Prefix+"/", nil)
			r.AddCookie(&http.Cookie{Name: c.cookieName(), Value: token})

			p, err := c.principal(r)
			if err != nil {
				t.Fatal(err)
			}
			if got := p != nil; got != tc.signedIn {
				t.Fatalf("signed in = %v at %s after creation (last use %s after); want %v", got, tc.now, tc.lastSeen, tc.signedIn)
			}
			err = cl.Get(context.Background(), client.ObjectKeyFromObject(s), &paygatev1.ConsoleSession{})
			if tc.signedIn && err != nil {
				t.Fatalf("a live session was not kept: %v", err)
			}
			if !tc.signedIn && !apierrors.IsNotFound(err) {
				t.Fatalf("an ended session was not deleted: %v", err)
			}
		})
	}
}

// TestUseExtendsTheIdleTimeout: a request records the session's use (at most once a minute), and
// the idle timeout counts from it; requests within the minute record nothing.
func TestUseExtendsTheIdleTimeout(t *testing.T) {
	created := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	const token = "shop-ns.another-session-token-for-the-test"
	s := &paygatev1.ConsoleSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop-ns", Name: paygatev1.ConsoleSessionName(consoleauth.TokenID(token)),
			CreationTimestamp: metav1.NewTime(created)},
		Spec: paygatev1.ConsoleSessionSpec{User: paygatev1.ConsoleUserName("owner@shop.example"), Method: paygatev1.ConsoleSignInPassword,
			Expires: metav1.NewTime(created.Add(DefaultAbsoluteTimeout)), IdleTimeoutSeconds: int32(DefaultIdleTimeout / time.Second)},
	}
	cl := fake.NewClientBuilder().WithScheme(kube.Scheme()).
		WithObjects(merchant("shop-ns", "shop"), consoleUser("shop-ns", "shop", "owner@shop.example", paygatev1.ConsoleOwner, false), s).
		WithStatusSubresource(&paygatev1.ConsoleUser{}, &paygatev1.ConsoleSession{}).Build()
	clk := clocktesting.NewFakeClock(created)
	c := New(Options{Cache: cl, APIReader: cl, Writer: cl, Clock: clk, PublicURL: "http://console.test"})
	use := func() bool {
		t.Helper()
		r := httptest.NewRequest(http.MethodGet, "http://console.test"+Prefix+"/", nil)
		r.AddCookie(&http.Cookie{Name: c.cookieName(), Value: token})
		p, err := c.principal(r)
		if err != nil {
			t.Fatal(err)
		}
		if p != nil {
			c.touch(r.Context(), p.session)
		}
		return p != nil
	}
	lastSeen := func() time.Time {
		t.Helper()
		got := &paygatev1.ConsoleSession{}
		if err := cl.Get(context.Background(), client.ObjectKeyFromObject(s), got); err != nil || got.Status.LastSeen == nil {
			t.Fatalf("session %v, last use recorded %v", err, got.Status.LastSeen)
		}
		return got.Status.LastSeen.Time
	}
	// Used every 20 minutes for two hours: never idle for 30.
	for i := 1; i <= 6; i++ {
		clk.Step(20 * time.Minute)
		if !use() {
			t.Fatalf("signed out after %d uses 20 minutes apart", i)
		}
		if !lastSeen().Equal(clk.Now()) {
			t.Fatalf("use %d recorded at %s, want %s", i, lastSeen(), clk.Now())
		}
	}
	recorded := lastSeen()
	clk.Step(30 * time.Second)
	if !use() || !lastSeen().Equal(recorded) {
		t.Fatalf("a use within the minute was recorded: %s, want %s", lastSeen(), recorded)
	}
	clk.Step(DefaultIdleTimeout)
	if use() {
		t.Fatal("still signed in after the idle timeout since the last recorded use")
	}
}
