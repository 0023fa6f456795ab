// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package archive

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// waitingLocks counts the advisory locks someone waits for.
func waitingLocks(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(ctx(t), "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func eventuallyWaiting(t *testing.T, s *Store, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for waitingLocks(t, s) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d advisory locks waited for, want %d", waitingLocks(t, s), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A create waits while the archiver holds the name to delete it, and the archiver waits while a
// create of the name is between its archive read and its create; names of other objects do not.
func TestNameLocksOrderCreatesAndDeletes(t *testing.T) {
	s := newStore(t)
	key := NameKey{Kind: KindPayment, Namespace: "demo", Name: "trx-000000000000000000000001"}
	other := NameKey{Kind: KindPayment, Namespace: "demo", Name: "trx-000000000000000000000002"}

	// The archiver first: the create runs only once the deletes are done.
	release, deleting := make(chan struct{}), make(chan struct{})
	var order []string
	var mu sync.Mutex
	record := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	done := make(chan error, 1)
	go func() {
		done <- s.WithNamesLocked(ctx(t), []NameKey{key, key}, func() { close(deleting); <-release; record("deleted") })
	}()
	<-deleting
	created := make(chan error, 1)
	go func() {
		archived, err := s.CreateUnlessArchived(ctx(t), key, func() { record("created") })
		if archived {
			t.Error("nothing is archived")
		}
		created <- err
	}()
	eventuallyWaiting(t, s, 1)
	if archived, err := s.CreateUnlessArchived(ctx(t), other, func() { record("other") }); err != nil || archived {
		t.Fatalf("another name: %v, %v", archived, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	if want := []string{"other", "deleted", "created"}; !equalStrings(order, want) {
		t.Fatalf("order %q, want %q", order, want)
	}

	// A create first: the archiver's deletes wait for it.
	order = nil
	inCreate, finish := make(chan struct{}), make(chan struct{})
	go func() {
		_, err := s.CreateUnlessArchived(ctx(t), key, func() { close(inCreate); <-finish; record("created") })
		created <- err
	}()
	<-inCreate
	go func() { done <- s.WithNamesLocked(ctx(t), []NameKey{key}, func() { record("deleted") }) }()
	eventuallyWaiting(t, s, 1)
	close(finish)
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if want := []string{"created", "deleted"}; !equalStrings(order, want) {
		t.Fatalf("order %q, want %q", order, want)
	}

	// An archived name is never created.
	p := payment(1, "duka", sandbox, "TZS", paygatev1.PaymentSuccess, "1000", "975", 1)
	if _, err := s.ArchivePayments(ctx(t), []paygatev1.Payment{p}); err != nil {
		t.Fatal(err)
	}
	archived, err := s.CreateUnlessArchived(ctx(t), key, func() { t.Error("an archived name was created") })
	if err != nil || !archived {
		t.Fatalf("archived name: %v, %v", archived, err)
	}
	if _, err := s.CreateUnlessArchived(ctx(t), NameKey{Kind: "secrets", Namespace: "demo", Name: "x"}, func() {}); err == nil {
		t.Fatal("an unknown kind was accepted")
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestNameLocksCloseTheArchiveRace drives the race the locks close: an archiver archives live
// objects and deletes them from "etcd" (a map here, create-if-absent as the Kubernetes API server
// is), while creators retry creates of the same names, each with a pause between the archive's
// answer and the create. Every name must be created once only, ever: its first life.
func TestNameLocksCloseTheArchiveRace(t *testing.T) {
	s := newStore(t)
	const names = 60
	var mu sync.Mutex
	live, creates := map[string]bool{}, map[string]int{}
	var objs []paygatev1.Payment
	for i := range names {
		p := payment(i+1, "duka", sandbox, "TZS", paygatev1.PaymentSuccess, "1000", "975", 1)
		objs = append(objs, p)
		live[p.Name], creates[p.Name] = true, 1
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				name := objs[rng.IntN(names)].Name
				_, err := s.CreateUnlessArchived(ctx(t), NameKey{Kind: KindPayment, Namespace: "demo", Name: name}, func() {
					time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond) // the create's round trip
					mu.Lock()
					defer mu.Unlock()
					if !live[name] {
						live[name] = true
						creates[name]++
					}
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := 0; i < names; i += 3 { // the archiver: commit, then delete under the names' locks
		batch := objs[i:min(i+3, names)]
		if _, err := s.ArchivePayments(ctx(t), batch); err != nil {
			t.Fatal(err)
		}
		var keys []NameKey
		for _, p := range batch {
			keys = append(keys, NameKey{Kind: KindPayment, Namespace: "demo", Name: p.Name})
		}
		if err := s.WithNamesLocked(ctx(t), keys, func() {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range batch {
				delete(live, p.Name)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond) // creators keep trying the archived names
	close(stop)
	wg.Wait()
	for name, n := range creates {
		if n != 1 {
			t.Errorf("%s created %d times", name, n)
		}
	}
}
