// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package archive

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/pgtest"
)

var deliveryTypes = []string{"payment.completed", "payment.failed", "payout.completed", "invoice.paid"}

// delivery is a finished webhook delivery of merchant in env, created at second created: a
// Delivered one is recorded either as the controller writes it or, for odd n, only by its first
// attempt (an empty status, as a receiver that accepted the first attempt leaves it).
func delivery(n int, merchant string, env paygatev1.Environment, phase paygatev1.DeliveryPhase, eventType string, created int) paygatev1.WebhookDelivery {
	d := paygatev1.WebhookDelivery{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("whd-%024d", n), Namespace: "demo", UID: uid("whd", n), CreationTimestamp: secs(created),
			Labels: map[string]string{paygatev1.LabelMerchant: merchant, paygatev1.LabelEnvironment: string(env)}},
		Spec: paygatev1.WebhookDeliverySpec{EventID: fmt.Sprintf("evt_%024d", n), EventType: eventType,
			MerchantRef: paygatev1.MerchantReference{Name: merchant}, Environment: env,
			Source: paygatev1.EventSource{Kind: "Payment", Name: fmt.Sprintf("trx-%d", n), UID: fmt.Sprintf("src-%d", n)},
			URL:    "https://example.com/hook", Payload: `{"id":"evt"}`},
	}
	at := secs(created + 1)
	switch phase {
	case paygatev1.DeliveryDelivered:
		if n%2 == 1 {
			d.Spec.FirstAttempt = &paygatev1.FirstDeliveryAttempt{Result: paygatev1.FirstAttemptDelivered, At: metav1.NewMicroTime(at.Time), StatusCode: 200}
			break
		}
		d.Status = paygatev1.WebhookDeliveryStatus{Phase: phase, TotalAttempts: 2, DeliveredAt: &at,
			Attempts: []paygatev1.DeliveryAttempt{{Number: 1, At: secs(created), StatusCode: 500, Error: "HTTP 500"}, {Number: 2, At: at, StatusCode: 200}}}
	case paygatev1.DeliveryAbandoned:
		d.Status = paygatev1.WebhookDeliveryStatus{Phase: phase, TotalAttempts: 1,
			Attempts: []paygatev1.DeliveryAttempt{{Number: 1, At: at, Error: "connection refused"}}}
	case paygatev1.DeliveryNoEndpoint:
		d.Spec.URL = ""
		d.Status = paygatev1.WebhookDeliveryStatus{Phase: phase}
	}
	return d
}

// sameCounts fails unless webhook_delivery_counts equals the counts of the rows, and returns them.
func sameCounts(t *testing.T, s *Store) []DeliveryCount {
	t.Helper()
	kept, fromRows, err := s.DeliveryCounts(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kept, fromRows) {
		t.Fatalf("webhook_delivery_counts\n%+v\ndiffers from the rows'\n%+v", kept, fromRows)
	}
	return kept
}

// TestDeliveryListFollowsTheOrderAndCounts: the archived deliveries of a merchant and environment,
// filtered by phase, event type or both, read in pages of every size, are exactly the filtered
// deliveries in the console's order (newest first, then the name, then the UID: ties on time are
// many), and each page's total, read from webhook_delivery_counts, is their number.
func TestDeliveryListFollowsTheOrderAndCounts(t *testing.T) {
	s := newStore(t)
	rng := rand.New(rand.NewPCG(29, 1))
	var all []paygatev1.WebhookDelivery
	for i := range 150 {
		merchant, env := "m", sandbox
		switch i % 5 {
		case 3:
			env = production
		case 4:
			merchant = "other"
		}
		phase := []paygatev1.DeliveryPhase{paygatev1.DeliveryDelivered, paygatev1.DeliveryDelivered, paygatev1.DeliveryAbandoned, paygatev1.DeliveryNoEndpoint}[rng.IntN(4)]
		all = append(all, delivery(rng.IntN(1_000_000), merchant, env, phase, deliveryTypes[rng.IntN(len(deliveryTypes))], rng.IntN(10)))
	}
	all = slices.CompactFunc(slices.SortedFunc(slices.Values(all), func(a, b paygatev1.WebhookDelivery) int { return strings.Compare(a.Name, b.Name) }),
		func(a, b paygatev1.WebhookDelivery) bool { return a.Name == b.Name })
	for chunk := range slices.Chunk(all, 40) {
		if _, err := s.ArchiveWebhookDeliveries(ctx(t), chunk); err != nil {
			t.Fatal(err)
		}
	}
	sameCounts(t, s)

	order := func(a, b paygatev1.WebhookDelivery) int {
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(string(a.UID), string(b.UID))
	}
	for _, f := range []DeliveryFilter{
		{Namespace: "demo", Merchant: "m", Environment: sandbox},
		{Namespace: "demo", Merchant: "m", Environment: production},
		{Namespace: "demo", Merchant: "m", Environment: sandbox, Phase: paygatev1.DeliveryDelivered},
		{Namespace: "demo", Merchant: "m", Environment: sandbox, Phase: paygatev1.DeliveryAbandoned},
		{Namespace: "demo", Merchant: "m", Environment: sandbox, Phase: paygatev1.DeliveryPending}, // never archived
		{Namespace: "demo", Merchant: "m", Environment: sandbox, EventType: "payment.completed"},
		{Namespace: "demo", Merchant: "other", Environment: sandbox, EventType: "invoice.paid", Phase: paygatev1.DeliveryNoEndpoint},
		{Namespace: "elsewhere", Merchant: "m", Environment: sandbox},
		{Namespace: "demo", Merchant: "m", Environment: sandbox, EventType: "no.such.type"},
	} {
		want := slices.SortedFunc(slices.Values(slices.DeleteFunc(slices.Clone(all), func(d paygatev1.WebhookDelivery) bool {
			return d.Namespace != f.Namespace || d.Spec.MerchantRef.Name != f.Merchant || d.Spec.Environment != f.Environment ||
				(f.Phase != "" && d.EffectiveStatus().Phase != f.Phase) || (f.EventType != "" && d.Spec.EventType != f.EventType)
		})), order)
		pages(t, fmt.Sprintf("deliveries %+v", f), want, func(limit, offset int) (Page[paygatev1.WebhookDelivery], error) {
			return s.ListWebhookDeliveries(ctx(t), f, limit, offset)
		})
	}
	// Without a merchant the rows are counted.
	p, err := s.ListWebhookDeliveries(ctx(t), DeliveryFilter{Namespace: "demo"}, 1, 0)
	if err != nil || p.Total != len(all) {
		t.Fatalf("every delivery: total %d (want %d), %v", p.Total, len(all), err)
	}
	got, err := s.GetWebhookDelivery(ctx(t), "demo", all[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	same(t, &all[0], got)
}

// TestDeliveryCountsFollowRepeatsAndRedeliveries: an archiver that repeats its pass counts each
// delivery once, concurrent archivers too; a delivery archived as abandoned, redelivered by the
// merchant and archived again before its delete moves from the abandoned count to the delivered
// one.
func TestDeliveryCountsFollowRepeatsAndRedeliveries(t *testing.T) {
	s := newStore(t)
	abandoned := delivery(2, "m", sandbox, paygatev1.DeliveryAbandoned, "payment.completed", 0)
	ds := []paygatev1.WebhookDelivery{abandoned}
	for i := range 200 {
		ds = append(ds, delivery(10+i, []string{"m", "n"}[i%2], sandbox,
			[]paygatev1.DeliveryPhase{paygatev1.DeliveryDelivered, paygatev1.DeliveryAbandoned, paygatev1.DeliveryNoEndpoint}[i%3], deliveryTypes[i%4], i%7))
	}
	const archivers = 5
	var wg sync.WaitGroup
	inserted := make([]int, archivers)
	errs := make([]error, archivers)
	for a := range archivers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(a), 3))
			for round := range 6 {
				var b []paygatev1.WebhookDelivery
				for _, d := range ds {
					if rng.IntN(3) == 0 || round == 5 {
						b = append(b, d)
					}
				}
				rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
				res, err := s.ArchiveWebhookDeliveries(context.Background(), b)
				if err != nil {
					errs[a] = err
					return
				}
				inserted[a] += res.Inserted[KindWebhookDelivery]
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range inserted {
		total += n
	}
	if total != len(ds) {
		t.Fatalf("%d deliveries inserted in all, want %d", total, len(ds))
	}
	sameCounts(t, s)
	count := func(phase paygatev1.DeliveryPhase) int {
		t.Helper()
		p, err := s.ListWebhookDeliveries(ctx(t), DeliveryFilter{Namespace: "demo", Merchant: "m", Environment: sandbox, Phase: phase,
			EventType: "payment.completed"}, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		return p.Total
	}
	abandonedBefore, deliveredBefore := count(paygatev1.DeliveryAbandoned), count(paygatev1.DeliveryDelivered)

	// Redelivered and accepted while its object was still in etcd: archived again.
	redelivered := abandoned.DeepCopy()
	at := secs(40)
	redelivered.Status = paygatev1.WebhookDeliveryStatus{Phase: paygatev1.DeliveryDelivered, TotalAttempts: 2, Redelivery: "1", DeliveredAt: &at,
		Attempts: []paygatev1.DeliveryAttempt{{Number: 1, At: at, StatusCode: 200}}}
	res, err := s.ArchiveWebhookDeliveries(ctx(t), []paygatev1.WebhookDelivery{*redelivered})
	if err != nil || res.Refreshed[KindWebhookDelivery] != 1 {
		t.Fatalf("re-archiving a redelivered delivery: %+v, %v", res, err)
	}
	if a, d := count(paygatev1.DeliveryAbandoned), count(paygatev1.DeliveryDelivered); a != abandonedBefore-1 || d != deliveredBefore+1 {
		t.Fatalf("after the redelivery: %d abandoned (want %d), %d delivered (want %d)", a, abandonedBefore-1, d, deliveredBefore+1)
	}
	sameCounts(t, s)
	got, err := s.GetWebhookDelivery(ctx(t), "demo", abandoned.Name)
	if err != nil {
		t.Fatal(err)
	}
	same(t, redelivered, got)
}

// TestDeliveryCountsMigration: migration 00006 counts the deliveries archived before it.
func TestDeliveryCountsMigration(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	s, err := Open(context.Background(), dsn, Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	db := stdlib.OpenDBFromPool(s.Pool())
	defer db.Close()
	p, err := s.provider(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx(t), 4); err != nil {
		t.Fatal(err)
	}
	for i, phase := range []paygatev1.DeliveryPhase{paygatev1.DeliveryDelivered, paygatev1.DeliveryDelivered, paygatev1.DeliveryAbandoned, paygatev1.DeliveryNoEndpoint} {
		d := delivery(i, "m", sandbox, phase, deliveryTypes[i%2], i)
		r, err := deliveryRecord(&d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Pool().Exec(ctx(t), strings.Replace(r.insertSQL(), " RETURNING uid", "", 1), r.vals...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Migrate(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if got := sameCounts(t, s); len(got) != 4 || got[0].Deliveries+got[1].Deliveries+got[2].Deliveries+got[3].Deliveries != 4 {
		t.Fatalf("counts after the migration: %+v", got)
	}
}
