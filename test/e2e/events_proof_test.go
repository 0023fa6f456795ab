// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/apiserver"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/pgtest"
	"github.com/paygate/paygate/pkg/paygate"
)

// archiveReplica starts PostgreSQL with the archive migrated and an apiserver replica (the
// admin's identity) that reads through it; it returns the store and the replica's URL.
func archiveReplica(name string) (*archive.Store, string) {
	GinkgoHelper()
	pg := pgtest.Start(GinkgoTB())
	dsn, err := pg.NewDatabase(ctx)
	Expect(err).NotTo(HaveOccurred())
	store, err := archive.Open(ctx, dsn, archive.Options{MaxConns: 4, ApplicationName: "paygate-e2e"})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(store.Close)
	Expect(store.Migrate(ctx)).To(Succeed())
	replicaCtx, stopReplica := context.WithCancel(ctx)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	replica, done, err := apiserver.Start(replicaCtx, env.Config, "127.0.0.1:0", apiserver.Options{
		CheckoutKey: key, PublicURL: "http://checkout.paygate.test", Archive: store, Log: logf.Log.WithName(name),
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		stopReplica()
		Eventually(done).Should(Receive(BeNil()))
	})
	return store, "http://" + replica.Listener.Addr().String()
}

// The events API's proof against the real kube-apiserver (docs/api.md, Events): 10,000 events of
// one merchant, created as fast as the API server takes them (hundreds in each second, named in no
// relation to their order), paged through with limit=100 while the events are archived between
// pages as the archiver does (the row committed, then the object deleted; some archived and still
// live), read exactly once each, in order, each with its own payload. EVENTS_PROOF sets the count.
var _ = Describe("The events API", func() {
	It("pages through 10,000 events, live and archived mixed, without a gap or a repeat", func() {
		n := 10000
		if v, err := strconv.Atoi(os.Getenv("EVENTS_PROOF")); err == nil && v > 0 {
			n = v
		}
		store, replicaURL := archiveReplica("apiserver-events")
		ns := newNamespace()
		shop := createMerchant(ns, "events-shop")
		c := clientAt(replicaURL, shop.merchant, paygatev1.EnvironmentSandbox)

		By(fmt.Sprintf("creating %d delivered events through the Kubernetes API", n))
		cfg := rest.CopyConfig(env.Config)
		cfg.QPS, cfg.Burst = 5000, 5000
		fast, err := client.New(cfg, client.Options{Scheme: kube.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		created := make([]paygatev1.WebhookDelivery, n)
		var wg sync.WaitGroup
		work := make(chan int)
		for range 16 {
			wg.Go(func() {
				defer GinkgoRecover()
				for i := range work {
					sum := sha256.Sum256([]byte(ns + "/" + strconv.Itoa(i)))
					id := hex.EncodeToString(sum[:12])
					d := &paygatev1.WebhookDelivery{
						ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "whd-" + id,
							Labels: map[string]string{paygatev1.LabelMerchant: shop.merchant.Name, paygatev1.LabelEnvironment: "sandbox"}},
						Spec: paygatev1.WebhookDeliverySpec{EventID: "evt_" + id, EventType: paygate.EventPaymentCompleted,
							MerchantRef: paygatev1.MerchantReference{Name: shop.merchant.Name}, Environment: paygatev1.EnvironmentSandbox,
							Source: paygatev1.EventSource{Kind: "Payment", Name: "trx-proof-" + strconv.Itoa(i), UID: "proof-" + strconv.Itoa(i)},
							URL:    "https://events-shop.example/hooks",
							Payload: fmt.Sprintf(`{"id":"evt_%s","type":"payment.completed","api_version":"2026-11-01","created_at":"2026-11-27T10:00:00.000000+00:00","data":{"n":%d}}`,
								id, i),
							FirstAttempt: &paygatev1.FirstDeliveryAttempt{Result: paygatev1.FirstAttemptDelivered, At: metav1.NowMicro(), StatusCode: 200}},
					}
					Expect(fast.Create(ctx, d)).To(Succeed())
					created[i] = *d
				}
			})
		}
		start := time.Now()
		for i := range n {
			work <- i
		}
		close(work)
		wg.Wait()
		GinkgoWriter.Printf("created %d events in %s\n", n, time.Since(start).Round(time.Millisecond))
		want := slices.Clone(created)
		slices.SortFunc(want, func(a, b paygatev1.WebhookDelivery) int { // oldest first, then names descending
			if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
				return c
			}
			return strings.Compare(b.Name, a.Name)
		})
		perSecond := map[int64]int{}
		for _, d := range created {
			perSecond[d.CreationTimestamp.Unix()]++
		}
		GinkgoWriter.Printf("%d seconds hold the events, up to %d in one\n", len(perSecond), slices.Max(mapValues(perSecond)))

		By("waiting until the replica has every event and the newest is listed (5 s old)")
		// The replica's cache receives the objects in the order the API server stored them: once it
		// lists the one stored last (the highest resourceVersion), it has them all.
		lastStored := slices.MaxFunc(created, func(a, b paygatev1.WebhookDelivery) int {
			ra, _ := strconv.ParseInt(a.ResourceVersion, 10, 64)
			rb, _ := strconv.ParseInt(b.ResourceVersion, 10, 64)
			return cmp.Compare(ra, rb)
		})
		at := slices.IndexFunc(want, func(d paygatev1.WebhookDelivery) bool { return d.Name == lastStored.Name })
		Expect(at).To(BeNumerically(">", 0))
		Eventually(func(g Gomega) {
			page, err := c.ListEvents(ctx, paygate.EventListOptions{After: want[at-1].Spec.EventID, Limit: 1})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(page.Data).NotTo(BeEmpty())
			g.Expect(page.Data[0].ID).To(Equal(lastStored.Spec.EventID))
		}, "4m", "2s").Should(Succeed()) // gently: the merchant's rate limit is 120 requests a minute

		By("paging through with limit=100, archiving events between pages")
		r := mathrand.New(mathrand.NewPCG(uint64(GinkgoRandomSeed()), 31))
		live := map[string]paygatev1.WebhookDelivery{}
		for _, d := range created {
			live[d.Name] = d
		}
		archived := 0
		var got []string
		after := ""
		for page := 0; ; page++ {
			if page%3 == 1 && len(live) > 0 {
				// Archive a few hundred live events, anywhere in the order (some already read, some
				// not); one in four stays live a while after its row is committed.
				var batch []paygatev1.WebhookDelivery
				for name, d := range live {
					if len(batch) == 300 {
						break
					}
					if r.IntN(3) == 0 {
						batch = append(batch, d)
						delete(live, name)
					}
				}
				_, err := store.ArchiveWebhookDeliveries(ctx, batch)
				Expect(err).NotTo(HaveOccurred())
				archived += len(batch)
				for i := range batch {
					if i%4 == 0 {
						continue
					}
					uid := batch[i].UID
					Expect(fast.Delete(ctx, &batch[i], client.Preconditions{UID: &uid})).To(Succeed())
				}
			}
			list, err := c.ListEvents(ctx, paygate.EventListOptions{Limit: 100, After: after})
			Expect(err).NotTo(HaveOccurred())
			for _, e := range list.Data {
				got = append(got, e.ID)
				Expect(string(e.Payload)).To(ContainSubstring(`"id":"`+e.ID+`"`), "each event with its own payload")
			}
			after = list.Pagination.NextAfter
			if !list.Pagination.HasMore {
				break
			}
			Expect(page).To(BeNumerically("<", n), "the list ends")
		}
		GinkgoWriter.Printf("read %d events in order; %d archived while paging\n", len(got), archived)
		Expect(archived).To(BeNumerically(">", n/4), "live and archived mixed")
		wantIDs := make([]string, len(want))
		for i := range want {
			wantIDs[i] = want[i].Spec.EventID
		}
		Expect(len(got)).To(Equal(n), "every event once")
		Expect(got).To(Equal(wantIDs), "in the order of the list: no gap, no repeat")

		// The deliveries go now, within this spec, rather than with the namespace while later specs
		// run.
		Expect(fast.DeleteAllOf(ctx, &paygatev1.WebhookDelivery{}, client.InNamespace(ns))).To(Succeed())
		Eventually(func(g Gomega) {
			var left paygatev1.WebhookDeliveryList
			g.Expect(fast.List(ctx, &left, client.InNamespace(ns), client.Limit(1))).To(Succeed())
			g.Expect(left.Items).To(BeEmpty())
		}, "2m", "500ms").Should(Succeed())
	})
})

func mapValues(m map[int64]int) []int {
	out := make([]int, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
