// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/pkg/paygate"
)

// writeAudit counts the writes kube-apiserver stores in one namespace, by resource and object:
// every create and every update that changed an object is one watch event with a new
// resourceVersion (one etcd revision, what docs/performance.md counts), whoever wrote it.
type writeAudit struct {
	mu     sync.Mutex
	writes map[string]map[string]int // resource → object name → writes
	last   time.Time
	stop   []func()
}

// auditWrites starts watching the namespace's Payments, WebhookDeliveries, Events and Balances
// from their current resourceVersion: what exists now is not counted, every later write is.
func auditWrites(ns string) *writeAudit {
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: kube.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	a := &writeAudit{writes: map[string]map[string]int{}, last: time.Now()}
	for resource, list := range map[string]client.ObjectList{
		"payments": &paygatev1.PaymentList{}, "webhookdeliveries": &paygatev1.WebhookDeliveryList{},
		"events": &corev1.EventList{}, "balances": &paygatev1.BalanceList{},
	} {
		Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		rv := list.(metav1.ListInterface).GetResourceVersion()
		w, err := wc.Watch(ctx, list, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		Expect(err).NotTo(HaveOccurred())
		a.stop = append(a.stop, w.Stop)
		go func() {
			defer GinkgoRecover()
			seen := map[string]bool{}
			for e := range w.ResultChan() {
				if e.Type != watch.Added && e.Type != watch.Modified {
					continue
				}
				obj := e.Object.(client.Object)
				if seen[obj.GetResourceVersion()] {
					continue // the same stored write, sent twice, is one write
				}
				seen[obj.GetResourceVersion()] = true
				name := obj.GetName()
				if ev, ok := obj.(*corev1.Event); ok {
					name = ev.InvolvedObject.Name + " " + ev.Reason
				}
				a.mu.Lock()
				if a.writes[resource] == nil {
					a.writes[resource] = map[string]int{}
				}
				a.writes[resource][name]++
				a.last = time.Now()
				a.mu.Unlock()
			}
		}()
	}
	DeferCleanup(func() {
		for _, stop := range a.stop {
			stop()
		}
	})
	return a
}

// quiet waits until nothing was written for d, and returns the writes by resource and object.
func (a *writeAudit) quiet(d time.Duration) map[string]map[string]int {
	Eventually(func() time.Duration {
		a.mu.Lock()
		defer a.mu.Unlock()
		return time.Since(a.last)
	}, "30s", "100ms").Should(BeNumerically(">=", d))
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]map[string]int{}
	for resource, byName := range a.writes {
		out[resource] = map[string]int{}
		for name, n := range byName {
			out[resource][name] = n
		}
	}
	return out
}

func (a *writeAudit) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var lines []string
	for resource, byName := range a.writes {
		for name, n := range byName {
			lines = append(lines, fmt.Sprintf("%s %s: %d", resource, name, n))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}

func sum(byName map[string]int) int {
	n := 0
	for _, v := range byName {
		n += v
	}
	return n
}

var _ = Describe("Kubernetes API writes", func() {
	// The writes-per-payment row of docs/performance.md, for one payment: its create (the
	// apiserver's), the attempt written ahead, the outcome (the simulator de-duplicates by our
	// reference, so its acceptance of the push is not written: docs/payments.md, The attempt
	// protocol), and its webhook delivery created once its first attempt was delivered. No Kubernetes Event: a settlement
	// records none, nor does a delivered webhook. The balance's writes are counted apart: they
	// are shared by the payments of the merchant that settle within its batch window.
	It("costs four writes per settled push payment with its webhook delivered, and no Event", func() {
		ns := newNamespace()
		createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.Simulation = paygatev1.SimulationSandboxAndProduction })
		duka := createMerchant(ns, "duka")
		Eventually(func(g Gomega) {
			var bl paygatev1.BalanceList
			g.Expect(k8s.List(ctx, &bl, client.InNamespace(ns))).To(Succeed())
			g.Expect(bl.Items).To(HaveLen(2), "the merchant's balances exist before the count starts")
		}).Should(Succeed())
		rcv := newReceiver()
		audit := auditWrites(ns)

		created, err := duka.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "10000", CurrencyCode: "TZS", RefTrx: uniqueName("order"), PaymentMode: "push",
			CustomerPhone: "+255712345678", CustomerName: "Asha", WebhookURL: rcv.url(),
		}, "")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { return len(rcv.requests()) }).Should(Equal(1))
		var delivery paygatev1.WebhookDelivery
		Eventually(func(g Gomega) {
			ds := deliveries(ns)
			g.Expect(ds).To(HaveLen(1))
			delivery = ds[0]
			g.Expect(delivery.EffectiveStatus().Phase).To(Equal(paygatev1.DeliveryDelivered))
		}).Should(Succeed())
		writes := audit.quiet(2 * time.Second)
		AddReportEntry("writes", audit.String())
		GinkgoWriter.Printf("writes for one settled push payment with its webhook delivered: %s\n", audit)

		Expect(writes["payments"]).To(Equal(map[string]int{created.TrxID: 3}),
			"the create, the attempt written ahead, the outcome")
		Expect(writes["webhookdeliveries"]).To(Equal(map[string]int{delivery.Name: 1}),
			"the delivery's create, carrying its delivered first attempt: no status write")
		Expect(delivery.Spec.FirstAttempt.Delivered()).To(BeTrue())
		Expect(delivery.Status.Phase).To(BeEmpty(), "nothing more was written")
		Expect(writes["events"]).To(BeEmpty(), "no Kubernetes Event for a settled payment or a delivered webhook")
		Expect(sum(writes["payments"]) + sum(writes["webhookdeliveries"]) + sum(writes["events"])).To(Equal(4))
		Expect(sum(writes["balances"])).To(BeNumerically("<=", 2),
			"the balance: the new payment's count and its money, batched (docs/ledger.md)")
		Expect(rcv.requests()).To(HaveLen(1), "one attempt, delivered")
	})
})
