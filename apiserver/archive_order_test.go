// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/kube"
)

// countingReader counts the reads that reach it.
type countingReader struct {
	client.Reader
	gets int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets++
	return r.Reader.Get(ctx, key, obj, opts...)
}

// scriptedArchive answers GetPayment from a script, one answer per call (the last repeats).
type scriptedArchive struct {
	Archive // any other method is not expected: a nil interface panics
	answers []func() (*paygatev1.Payment, error)
	calls   int
}

func (a *scriptedArchive) GetPayment(context.Context, string, string) (*paygatev1.Payment, error) {
	answer := a.answers[min(a.calls, len(a.answers)-1)]
	a.calls++
	return answer()
}

// TestReadArchivableOrder: a read the cache cannot answer asks the archive before the Kubernetes
// API server, so an archived payment costs no live read, and every answer is the one the
// live-first order gave (readArchivable).
func TestReadArchivableOrder(t *testing.T) {
	trx := "trx-" + strings.Repeat("b", 24)
	payment := func(merchant string) *paygatev1.Payment {
		return &paygatev1.Payment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: trx},
			Spec:       paygatev1.PaymentSpec{MerchantRef: paygatev1.MerchantReference{Name: merchant}, Environment: paygatev1.EnvironmentSandbox},
		}
	}
	ours, theirs := payment("duka"), payment("kahawa")
	archived := func() (*paygatev1.Payment, error) { return ours.DeepCopy(), nil }
	notArchived := func() (*paygatev1.Payment, error) { return nil, archive.ErrNotFound }
	down := func() (*paygatev1.Payment, error) { return nil, errors.New("connection refused") }
	c := &caller{merchant: &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "duka"}}, env: paygatev1.EnvironmentSandbox}

	for _, tt := range []struct {
		name             string
		cached, apiSrv   *paygatev1.Payment
		live             bool
		archive          []func() (*paygatev1.Payment, error)
		wantFound        bool
		wantArchiveError bool
		wantLive, wantDB int
	}{
		{name: "in the cache", cached: ours, apiSrv: ours, archive: []func() (*paygatev1.Payment, error){down}, wantFound: true},
		{name: "another merchant's, in the cache", cached: theirs, apiSrv: theirs, archive: []func() (*paygatev1.Payment, error){archived}},
		{name: "archived: no live read", archive: []func() (*paygatev1.Payment, error){archived}, wantFound: true, wantDB: 1},
		{name: "created a moment ago, not archived", apiSrv: ours, archive: []func() (*paygatev1.Payment, error){notArchived},
			wantFound: true, wantLive: 1, wantDB: 1},
		{name: "created a moment ago, the archive down", apiSrv: ours, archive: []func() (*paygatev1.Payment, error){down},
			wantFound: true, wantLive: 1, wantDB: 1},
		{name: "archived between the archive's answer and the live read", archive: []func() (*paygatev1.Payment, error){notArchived, archived},
			wantFound: true, wantLive: 1, wantDB: 2},
		{name: "nowhere", archive: []func() (*paygatev1.Payment, error){notArchived}, wantLive: 1, wantDB: 2},
		{name: "nowhere live, the archive down: asked once", archive: []func() (*paygatev1.Payment, error){down},
			wantArchiveError: true, wantLive: 1, wantDB: 1},
		{name: "another merchant's, archived", archive: []func() (*paygatev1.Payment, error){func() (*paygatev1.Payment, error) { return theirs.DeepCopy(), nil }},
			wantLive: 1, wantDB: 2},
		{name: "live first when asked", cached: ours, apiSrv: ours, live: true, archive: []func() (*paygatev1.Payment, error){down},
			wantFound: true, wantLive: 1},
		{name: "live first when asked, archived", live: true, archive: []func() (*paygatev1.Payment, error){archived},
			wantFound: true, wantLive: 1, wantDB: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			build := func(p *paygatev1.Payment) client.Client {
				b := fake.NewClientBuilder().WithScheme(kube.Scheme())
				if p != nil {
					b = b.WithObjects(p.DeepCopy())
				}
				return b.Build()
			}
			live := &countingReader{Reader: build(tt.apiSrv)}
			db := &scriptedArchive{answers: tt.archive}
			s := New(Options{Cache: build(tt.cached), APIReader: live, Archive: db, CheckoutKey: make([]byte, 32)})

			got, err := s.payment(context.Background(), c, trx, tt.live)
			if tt.wantArchiveError != isArchiveError(err) || (err != nil && !tt.wantArchiveError) {
				t.Fatalf("error %v, want an archive error: %v", err, tt.wantArchiveError)
			}
			if (got != nil) != tt.wantFound {
				t.Fatalf("found %v, want %v", got != nil, tt.wantFound)
			}
			if got != nil && got.Spec.MerchantRef.Name != "duka" {
				t.Fatalf("answered %s's payment", got.Spec.MerchantRef.Name)
			}
			if live.gets != tt.wantLive || db.calls != tt.wantDB {
				t.Errorf("%d live reads and %d archive reads, want %d and %d", live.gets, db.calls, tt.wantLive, tt.wantDB)
			}
		})
	}
}
