// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/provider"
)

// newPayment is a Payment as the apiserver writes it: pending, with a push request when phone is
// set.
func newPayment(ns, merchant, name, amount string, gw *paygatev1.Gateway, phone string) *paygatev1.Payment {
	p := &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{paygatev1.LabelMerchant: merchant, paygatev1.LabelEnvironment: "sandbox"}},
		Spec: paygatev1.PaymentSpec{
			MerchantRef: paygatev1.MerchantReference{Name: merchant}, Environment: paygatev1.EnvironmentSandbox,
			MerchantReference: "ref-" + name, Amount: paygatev1.Decimal(amount), Currency: gw.Spec.Currency,
			Mode: paygatev1.PaymentModePush, Gateways: []paygatev1.GatewayCode{gw.Code()},
			ExpiresAt: metav1.NewTime(clock.Now().Add(30 * time.Minute)),
		},
	}
	if phone != "" {
		p.Spec.Customer.Phone = paygatev1.MobileNumber(phone)
		p.Spec.PushRequest = &paygatev1.PushRequest{Sequence: 1, Phone: paygatev1.MobileNumber(phone), RequestedAt: metav1.NewMicroTime(clock.Now())}
	}
	return p
}

func getPayment(g Gomega, p *paygatev1.Payment) *paygatev1.Payment {
	out := &paygatev1.Payment{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), out)).To(Succeed())
	return out
}

func waitPhase(p *paygatev1.Payment, phase paygatev1.PaymentPhase) *paygatev1.Payment {
	var out *paygatev1.Payment
	EventuallyWithOffset(1, func(g Gomega) {
		out = getPayment(g, p)
		g.Expect(out.Status.Phase).To(Equal(phase))
	}).Should(Succeed())
	return out
}

// touch makes the controller look at a payment now (after the test moved the clock), as its
// timed requeue would at that moment.
func touch(p *paygatev1.Payment) {
	EventuallyWithOffset(1, func(g Gomega) {
		cur := getPayment(g, p)
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations["test.paygate.dev/touched"] = clock.Now().String()
		g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	}).Should(Succeed())
}

var _ = Describe("Payment controller", Ordered, func() {
	var (
		ns string
		gw *paygatev1.Gateway
	)
	BeforeEach(func() {
		ns = newNamespace()
		gw = createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.Fees = paygatev1.GatewayFees{Percent: "2.5", Fixed: "10"} })
	})

	It("settles a sandbox push: fee half-up, net exact, remark, one push", func() {
		p := newPayment(ns, "duka", "trx-success", "1001", gw, "+255712345678")
		Expect(k8s.Create(ctx, p)).To(Succeed())
		done := waitPhase(p, paygatev1.PaymentSuccess)
		// 1001 × 2.5 % = 25.025, + 10 = 35.025 → 35.03 (half-up at TZS's 2 places)
		Expect(string(done.Status.Fee)).To(Equal("35.03"))
		Expect(string(done.Status.NetAmount)).To(Equal("965.97"))
		Expect(done.Status.Remark).To(Equal(provider.SandboxRemark))
		Expect(done.Status.Gateway).To(Equal(gw.Code()))
		Expect(done.Status.SettledAt).NotTo(BeNil())
		// Stored to the microsecond (the API's updated_at reports it): the suite's clock stands
		// still, so settlement is exactly its time, sub-second part included.
		Expect(done.Status.SettledAt.Time).To(BeTemporally("==", clock.Now().Truncate(time.Microsecond)))
		Expect(done.Status.Attempts).To(HaveLen(1))
		a := done.Status.Attempts[0]
		Expect(a.StartedAt.Time).To(BeTemporally("==", clock.Now().Truncate(time.Microsecond)))
		Expect(a.Phase).To(Equal(paygatev1.AttemptSucceeded))
		Expect(a.Reference).To(Equal(ns + ".trx-success.1"))
		Expect(sandbox.Pushes(a.Reference)).To(Equal(1))
		Expect(meta.IsStatusConditionTrue(done.Status.Conditions, paygatev1.ConditionReady)).To(BeTrue())
		// No Kubernetes Event: a settlement is in status (Ready PaymentSucceeded), in its webhook
		// event and in paygate_payments_total; the accepted push is in status only.
		Expect(meta.FindStatusCondition(done.Status.Conditions, paygatev1.ConditionReady).Reason).To(Equal("PaymentSucceeded"))
		Consistently(func() []string { return eventReasons(ns, "trx-success") }, "2s").Should(BeEmpty())

		By("counting it for SREs")
		Eventually(func() float64 {
			return testutil.ToFloat64(metrics.PaymentsSettled.WithLabelValues("sandbox", "success", ""))
		}).Should(BeNumerically(">=", 1))
		Expect(testutil.ToFloat64(metrics.ProviderRequests.WithLabelValues("sandbox", "push", "PENDING"))).To(BeNumerically(">=", 1))

		By("never changing a terminal payment")
		cur := getPayment(Default, p)
		cur.Spec.PushRequest = &paygatev1.PushRequest{Sequence: 2, Phone: "+255712345678", RequestedAt: metav1.NewMicroTime(clock.Now())}
		Expect(k8s.Update(ctx, cur)).To(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(getPayment(g, p).Status.Attempts).To(HaveLen(1))
		}, "1s").Should(Succeed())
	})

	DescribeTable("fails with the reason code of each sandbox failure number",
		func(phone string, code paygatev1.FailureCode) {
			p := newPayment(ns, "duka", "trx-fail", "5000", gw, phone)
			Expect(k8s.Create(ctx, p)).To(Succeed())
			done := waitPhase(p, paygatev1.PaymentFailed)
			Expect(done.Status.Reason).To(Equal(string(code)))
			Expect(done.Status.Fee).To(BeEmpty())
			Expect(done.Status.Attempts[0].Code).To(Equal(string(code)))
		},
		Entry("insufficient funds", "+255711000001", paygatev1.FailureInsufficientFunds),
		Entry("declined", "+255711000002", paygatev1.FailurePaymentDeclined),
		Entry("cancelled by the customer", "+254711000003", paygatev1.FailureCustomerCancelled),
	)

	It("expires a pending payment with EXPIRED_SESSION, pushed or not", func() {
		idle := newPayment(ns, "duka", "trx-idle", "5000", gw, "")
		unanswered := newPayment(ns, "duka", "trx-unanswered", "5000", gw, "+255711000004")
		Expect(k8s.Create(ctx, idle)).To(Succeed())
		Expect(k8s.Create(ctx, unanswered)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := getPayment(g, unanswered)
			g.Expect(cur.Status.Attempts).To(HaveLen(1))
			g.Expect(cur.Status.Attempts[0].Phase).To(Equal(paygatev1.AttemptPending))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getPayment(g, idle).Status.Phase).To(Equal(paygatev1.PaymentPending))
		}).Should(Succeed())

		clock.Step(31 * time.Minute)
		touch(idle)
		for _, p := range []*paygatev1.Payment{idle, unanswered} {
			done := waitPhase(p, paygatev1.PaymentFailed)
			Expect(done.Status.Reason).To(Equal(string(paygatev1.FailureExpiredSession)))
		}
		Eventually(func() []string { return eventReasons(ns, "trx-idle") }).Should(ContainElement("PaymentExpired"))

		By("ignoring a push request that arrives after expiry")
		late := newPayment(ns, "duka", "trx-late", "5000", gw, "+255712345678")
		late.Spec.ExpiresAt = metav1.NewTime(clock.Now().Add(-time.Second))
		Expect(k8s.Create(ctx, late)).To(Succeed())
		done := waitPhase(late, paygatev1.PaymentFailed)
		Expect(done.Status.Attempts).To(BeEmpty())
	})

	It("waits for a slow customer and resolves an ambiguous answer by asking again", func() {
		slow := newPayment(ns, "duka", "trx-slow", "5000", gw, "+255711000005")
		ambiguous := newPayment(ns, "duka", "trx-ambiguous", "5000", gw, "+255711000009")
		Expect(k8s.Create(ctx, slow)).To(Succeed())
		Expect(k8s.Create(ctx, ambiguous)).To(Succeed())
		Eventually(func(g Gomega) {
			a := getPayment(g, ambiguous).LatestAttempt()
			g.Expect(a).NotTo(BeNil())
			g.Expect(a.Phase).To(Equal(paygatev1.AttemptAmbiguous))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(getPayment(g, ambiguous).Status.Phase).To(Equal(paygatev1.PaymentPending), "asked again, still ambiguous")
		}, "1s").Should(Succeed())
		clock.Step(6 * time.Second) // past the simulator's AmbiguousFor
		done := waitPhase(ambiguous, paygatev1.PaymentSuccess)
		Expect(done.Status.Attempts).To(HaveLen(1))
		Expect(sandbox.Pushes(done.Status.Attempts[0].Reference)).To(Equal(1), "an ambiguous answer never causes a second push")

		Consistently(func(g Gomega) {
			g.Expect(getPayment(g, slow).Status.Phase).To(Equal(paygatev1.PaymentPending))
		}, "1s").Should(Succeed())
		clock.Step(15 * time.Second)
		waitPhase(slow, paygatev1.PaymentSuccess)
	})

	It("finishes sandbox pushes in flight after a restart: the new simulator answers from the recorded attempt", func() {
		Expect(env.StopManager()).To(Succeed())
		DeferCleanup(func() {
			Expect(env.StopManager()).To(Succeed())
			_, err := env.StartManager(managerOptions())
			Expect(err).NotTo(HaveOccurred())
		})
		// Three payments whose attempts a manager recorded before it died: one it never pushed
		// (Initiating), one its simulator accepted (Pending), and one to a customer who never
		// answers, whose checkout has expired meanwhile.
		lost := newPayment(ns, "duka", "trx-lost", "5000", gw, "+255712345678")
		accepted := newPayment(ns, "duka", "trx-accepted", "5000", gw, "+255712345678")
		stranded := newPayment(ns, "duka", "trx-stranded", "5000", gw, "+255711000004")
		stranded.Spec.ExpiresAt = metav1.NewTime(clock.Now().Add(time.Minute))
		for _, p := range []*paygatev1.Payment{lost, accepted, stranded} {
			Expect(k8s.Create(ctx, p)).To(Succeed())
			phase := paygatev1.AttemptPending
			if p == lost {
				phase = paygatev1.AttemptInitiating
			}
			p.Status = paygatev1.PaymentStatus{Phase: paygatev1.PaymentPending, Attempts: []paygatev1.PushAttempt{{
				Sequence: 1, Reference: ns + "." + p.Name + ".1", Gateway: gw.Code(),
				Phase: phase, Fees: gw.Spec.Fees, StartedAt: metav1.NewMicroTime(clock.Now()),
			}}}
			Expect(k8s.Status().Update(ctx, p)).To(Succeed())
		}
		clock.Step(2 * time.Minute)

		// A new process: its simulator has never heard of any of them.
		restarted := provider.NewSandbox(provider.SandboxOptions{Clock: clock.Now})
		opts := managerOptions()
		opts.Providers = &provider.Registry{Sandbox: restarted}
		_, err := env.StartManager(opts)
		Expect(err).NotTo(HaveOccurred())
		for _, p := range []*paygatev1.Payment{lost, accepted} {
			done := waitPhase(p, paygatev1.PaymentSuccess)
			Expect(done.Status.Attempts).To(HaveLen(1), p.Name)
			Expect(restarted.Pushes(ns+"."+p.Name+".1")).To(BeZero(), "%s: nothing is pushed again", p.Name)
		}
		done := waitPhase(stranded, paygatev1.PaymentFailed)
		Expect(done.Status.Reason).To(Equal(string(paygatev1.FailureExpiredSession)))
		Eventually(func(g Gomega) {
			var deliveries paygatev1.WebhookDeliveryList
			g.Expect(k8s.List(ctx, &deliveries, client.InNamespace(ns))).To(Succeed())
			var types []string
			for _, d := range deliveries.Items {
				if d.Spec.Source.Name == stranded.Name {
					types = append(types, string(d.Spec.EventType))
				}
			}
			g.Expect(types).To(ConsistOf("payment.failed"), "the expired payment's webhook event")
		}).Should(Succeed())
	})

	It("settles 200 concurrent payments and the balance equals the sum of their net amounts", func() {
		m := createMerchant(ns, "busy-shop")
		const n = 200
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			want = money.Amount{}
			cur  = money.Currency{Code: "TZS", Scale: 2}
		)
		sched := money.FeeSchedule{Percent: money.MustParseAmount("2.5"), Fixed: money.MustParseAmount("10")}
		work := make(chan int)
		for range 8 {
			wg.Go(func() {
				defer GinkgoRecover()
				for i := range work {
					amount := fmt.Sprintf("%d.%02d", 1000+i*37, i%100)
					_, net, err := money.ComputeFee(money.MustParseAmount(amount), sched, cur)
					Expect(err).NotTo(HaveOccurred())
					mu.Lock()
					want = want.Add(net)
					mu.Unlock()
					Expect(k8s.Create(ctx, newPayment(ns, m.Name, fmt.Sprintf("trx-bulk-%03d", i), amount, gw, "+255712345678"))).To(Succeed())
				}
			})
		}
		for i := range n {
			work <- i
		}
		close(work)
		wg.Wait()

		Eventually(func(g Gomega) {
			var b paygatev1.Balance
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: paygatev1.BalanceName(m.Name, paygatev1.EnvironmentSandbox)}, &b)).To(Succeed())
			g.Expect(b.Status.Currencies).To(HaveLen(1))
			g.Expect(b.Status.Currencies[0].SettledPayments).To(BeEquivalentTo(n))
			g.Expect(string(b.Status.Currencies[0].Available)).To(Equal(want.StringFixed(2)))
			ready := meta.FindStatusCondition(b.Status.Conditions, paygatev1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(ready.Reason).To(Equal(controllers.ReasonBalanceComputed))
			g.Expect(b.Status.ObservedGeneration).To(Equal(b.Generation))
		}, "3m").Should(Succeed())

		var b paygatev1.Balance
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: paygatev1.BalanceName(m.Name, paygatev1.EnvironmentProduction)}, &b)).To(Succeed())
		Expect(b.Status.Currencies).To(BeEmpty(), "sandbox money never shows in production")
		var list paygatev1.PaymentList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		led, err := controllers.ComputeLedger(m.Name, paygatev1.EnvironmentSandbox, list.Items, nil, nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(led.Status.Currencies[0].Available).To(Equal(sandboxAvailable(ns, m.Name)))
	})
})

func sandboxAvailable(ns, merchant string) paygatev1.Decimal {
	var b paygatev1.Balance
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: paygatev1.BalanceName(merchant, paygatev1.EnvironmentSandbox)}, &b)).To(Succeed())
	return b.Status.Currencies[0].Available
}
