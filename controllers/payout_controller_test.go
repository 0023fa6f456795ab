// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/controllers"
	webhookevents "github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/payouts"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/test/fakeupstream"
)

// settlementNumber is where the payout specs' merchant is paid.
const settlementNumber = "+255712345678"

// payoutMerchant creates merchant "duka", which passes every payout gate: KYB and business
// approved, a Tanzanian settlement number.
func payoutMerchant(ns string) *paygatev1.Merchant {
	return createMerchant(ns, "duka", func(m *paygatev1.Merchant) {
		m.Spec.KYBStatus, m.Spec.BusinessStatus = paygatev1.KYBApproved, paygatev1.BusinessApproved
		m.Spec.SettlementNumber = settlementNumber
	})
}

// withPayouts makes a gateway its currency's disbursing gateway: 1 % per payout.
func withPayouts(g *paygatev1.Gateway) {
	g.Spec.Payouts = &paygatev1.PayoutSchedule{Fees: paygatev1.GatewayFees{Percent: "1", Fixed: "0"}}
}

// payoutSeq spaces the creation times of the payouts a spec creates: the suite's clock stands
// still, and reservations follow spec.createdAt.
var payoutSeq atomic.Int64

// newPayout is a Payout as the apiserver records it (docs/payouts.md): a UUID name, the fee of
// the gateway's payout schedule, the settlement number as destination.
func newPayout(m *paygatev1.Merchant, env paygatev1.Environment, amount string, gw *paygatev1.Gateway) *paygatev1.Payout {
	cur, ok := money.LookupCurrency(string(gw.Spec.Currency))
	Expect(ok).To(BeTrue())
	q, err := payouts.NewQuote(money.MustParseAmount(amount), cur, gw)
	Expect(err).NotTo(HaveOccurred())
	return &paygatev1.Payout{
		ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: uuid.NewString(),
			Labels: map[string]string{paygatev1.LabelMerchant: m.Name, paygatev1.LabelEnvironment: string(env)}},
		Spec: paygatev1.PayoutSpec{
			MerchantRef: paygatev1.MerchantReference{Name: m.Name}, Environment: env,
			Amount: paygatev1.Decimal(q.Amount.StringFixed(cur.Scale)), Fee: paygatev1.Decimal(q.Fee.StringFixed(cur.Scale)),
			PayableAmount: paygatev1.Decimal(q.Payable.StringFixed(cur.Scale)), Currency: gw.Spec.Currency,
			Destination: m.Spec.SettlementNumber, Gateway: gw.Code(),
			CreatedAt: metav1.NewMicroTime(clock.Now().Add(-time.Minute + time.Duration(payoutSeq.Add(1))*time.Microsecond)),
		},
	}
}

func getPayout(g Gomega, p *paygatev1.Payout) *paygatev1.Payout {
	out := &paygatev1.Payout{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), out)).To(Succeed())
	return out
}

func waitPayout(p *paygatev1.Payout, phase paygatev1.PayoutPhase) *paygatev1.Payout {
	var out *paygatev1.Payout
	EventuallyWithOffset(1, func(g Gomega) {
		out = getPayout(g, p)
		g.Expect(out.Status.Phase).To(Equal(phase))
	}).Should(Succeed())
	return out
}

// annotatePayout sets an annotation on a payout (an operator's kubectl annotate; also how a spec
// makes the controller look at a payout after moving the clock).
func annotatePayout(p *paygatev1.Payout, key, value string) {
	EventuallyWithOffset(1, func(g Gomega) {
		cur := getPayout(g, p)
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[key] = value
		g.Expect(k8s.Update(ctx, cur)).To(Succeed())
	}).Should(Succeed())
}

func touchPayout(p *paygatev1.Payout) {
	annotatePayout(p, "test.paygate.dev/touched", clock.Now().String())
}

// settle creates n payments of amount for merchant "duka" in env through gw and waits until they
// settled; it returns the sum of their net amounts.
func settle(ns string, env paygatev1.Environment, gw *paygatev1.Gateway, n int, amount string) money.Amount {
	var sum money.Amount
	for i := range n {
		name := fmt.Sprintf("trx-%s-%s-%d", env, uniqueName("p"), i)
		p := newPayment(ns, "duka", name, amount, gw, "+255713000100")
		if env == paygatev1.EnvironmentProduction {
			p = productionPayment(ns, name, gw, "+255713000100")
			p.Spec.Amount = paygatev1.Decimal(amount)
		}
		Expect(k8s.Create(ctx, p)).To(Succeed())
		done := waitPhase(p, paygatev1.PaymentSuccess)
		sum = sum.Add(money.MustParseAmount(string(done.Status.NetAmount)))
	}
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(currencyBalance(g, ns, "duka", env, "TZS").Settled).To(BeEquivalentTo(sum.StringFixed(2)))
	}).Should(Succeed())
	return sum
}

func getBalance(g Gomega, ns, merchant string, env paygatev1.Environment) *paygatev1.Balance {
	b := &paygatev1.Balance{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: paygatev1.BalanceName(merchant, env)}, b)).To(Succeed())
	return b
}

// currencyBalance is the Balance's entry for currency (zero when it has none).
func currencyBalance(g Gomega, ns, merchant string, env paygatev1.Environment, currency paygatev1.CurrencyCode) paygatev1.CurrencyBalance {
	for _, c := range getBalance(g, ns, merchant, env).Status.Currencies {
		if c.Currency == currency {
			return c
		}
	}
	return paygatev1.CurrencyBalance{Currency: currency}
}

// amountOf reads a stored decimal ("" is zero).
func amountOf(d paygatev1.Decimal) money.Amount {
	if d == "" {
		return money.Amount{}
	}
	return money.MustParseAmount(string(d))
}

// expectLedgerInvariant waits until the merchant's Balance in env is what its payments and payouts
// say (docs/ledger.md), for every currency:
//
//	available = settled net payments - paid out - reserved
//
// with settled the net amounts of the successful payments, paid out the successful payouts,
// reserved the payouts reserved and not finished, and the Balance's reservations exactly those.
// It returns the Balance.
func expectLedgerInvariant(ns, merchant string, env paygatev1.Environment) *paygatev1.Balance {
	var b *paygatev1.Balance
	EventuallyWithOffset(1, func(g Gomega) {
		var payments paygatev1.PaymentList
		g.Expect(k8s.List(ctx, &payments, client.InNamespace(ns), client.MatchingLabels{paygatev1.LabelMerchant: merchant})).To(Succeed())
		var pos paygatev1.PayoutList
		g.Expect(k8s.List(ctx, &pos, client.InNamespace(ns), client.MatchingLabels{paygatev1.LabelMerchant: merchant})).To(Succeed())
		b = getBalance(g, ns, merchant, env)

		settled, paid, reserved := map[paygatev1.CurrencyCode]money.Amount{}, map[paygatev1.CurrencyCode]money.Amount{}, map[paygatev1.CurrencyCode]money.Amount{}
		currencies := map[paygatev1.CurrencyCode]bool{}
		for _, p := range payments.Items {
			if p.Spec.Environment == env && p.Status.Phase == paygatev1.PaymentSuccess {
				settled[p.Spec.Currency] = settled[p.Spec.Currency].Add(amountOf(p.Status.NetAmount))
				currencies[p.Spec.Currency] = true
			}
		}
		var holds []string
		for _, p := range pos.Items {
			if p.Spec.Environment != env {
				continue
			}
			switch {
			case p.Status.Phase == paygatev1.PayoutSuccess:
				paid[p.Spec.Currency] = paid[p.Spec.Currency].Add(amountOf(p.Spec.Amount))
			case p.Reserved():
				reserved[p.Spec.Currency] = reserved[p.Spec.Currency].Add(amountOf(p.Spec.Amount))
				holds = append(holds, p.Name)
			default:
				continue
			}
			currencies[p.Spec.Currency] = true
		}
		for c := range currencies {
			var got paygatev1.CurrencyBalance
			for _, cb := range b.Status.Currencies {
				if cb.Currency == c {
					got = cb
				}
			}
			out := paid[c].Add(reserved[c])
			g.Expect(out.Cmp(settled[c])).To(BeNumerically("<=", 0), "%s: payouts %s above settled %s", c, out, settled[c])
			available, err := settled[c].Sub(out)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Settled).To(BeEquivalentTo(settled[c].StringFixed(2)), "%s settled", c)
			g.Expect(got.PaidOut).To(BeEquivalentTo(paid[c].StringFixed(2)), "%s paid out", c)
			g.Expect(got.Reserved).To(BeEquivalentTo(reserved[c].StringFixed(2)), "%s reserved", c)
			g.Expect(got.Available).To(BeEquivalentTo(available.StringFixed(2)), "%s available", c)
		}
		var reservations []string
		for _, r := range b.Status.PayoutReservations {
			reservations = append(reservations, r.Payout)
		}
		g.Expect(reservations).To(ConsistOf(holds), "the Balance's reservations are the reserved, unfinished payouts")
		ready := meta.FindStatusCondition(b.Status.Conditions, paygatev1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(controllers.ReasonBalanceComputed))
	}).Should(Succeed())
	return b
}

// payoutEvent is the payout's webhook event of eventType, with its data.
func payoutEvent(g Gomega, p *paygatev1.Payout, eventType string) (*paygatev1.WebhookDelivery, paygate.Payout) {
	d := &paygatev1.WebhookDelivery{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: webhookevents.DeliveryName(string(p.UID), eventType)}, d)).To(Succeed())
	var env struct {
		ID   string         `json:"id"`
		Type string         `json:"type"`
		Data paygate.Payout `json:"data"`
	}
	g.Expect(json.Unmarshal([]byte(d.Spec.Payload), &env)).To(Succeed())
	g.Expect(env.Type).To(Equal(eventType))
	g.Expect(env.ID).To(Equal(d.Spec.EventID))
	return d, env.Data
}

// payoutState names where a payout stands, for following its transitions.
func payoutState(p *paygatev1.Payout) string {
	switch {
	case p.Terminal():
		return string(p.Status.Phase)
	case p.Status.Phase == paygatev1.PayoutProcessing:
		return "processing"
	case p.Status.ReservedAt != nil:
		return "reserved"
	}
	return "pending"
}

// watchPayoutStates records every state the payouts of ns pass through, as the API server
// stores them, by payout name. stop ends the watch.
func watchPayoutStates(ns string) (states func(name string) []string, stop func()) {
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: kube.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &paygatev1.PayoutList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	var (
		mu   sync.Mutex
		seen = map[string][]string{}
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*paygatev1.Payout)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			mu.Lock()
			if s := seen[p.Name]; len(s) == 0 || s[len(s)-1] != payoutState(p) {
				seen[p.Name] = append(s, payoutState(p))
			}
			mu.Unlock()
		}
	}()
	return func(name string) []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(seen[name])
		}, func() {
			w.Stop()
			<-done
		}
}

var _ = Describe("Payouts", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	Context("in the sandbox", func() {
		var (
			gw *paygatev1.Gateway
			m  *paygatev1.Merchant
		)
		BeforeEach(func() {
			gw = createGateway("TZS", withPayouts)
			m = payoutMerchant(ns)
		})

		It("pays out end to end: pending, reserved, processing, success, and a payout.completed event", func() {
			settled := settle(ns, paygatev1.EnvironmentSandbox, gw, 3, "10000") // 3 × 9750.00
			Expect(settled.StringFixed(2)).To(Equal("29250.00"))
			states, stop := watchPayoutStates(ns)
			defer stop()

			p := newPayout(m, paygatev1.EnvironmentSandbox, "10000.00", gw)
			Expect(string(p.Spec.Fee)).To(Equal("100.00"))
			Expect(k8s.Create(ctx, p)).To(Succeed())
			done := waitPayout(p, paygatev1.PayoutSuccess)

			Eventually(func() []string { return states(p.Name) }).Should(Equal([]string{"pending", "reserved", "processing", "success"}))
			Expect(done.Status.ReservedAt).NotTo(BeNil())
			Expect(done.Status.Reason).To(BeEmpty())
			Expect(done.Status.Remark).To(Equal(provider.SandboxRemark))
			a := done.Status.Attempt
			Expect(a).NotTo(BeNil())
			Expect(a.Reference).To(Equal(ns + "." + p.Name))
			Expect(a.Phase).To(Equal(paygatev1.AttemptSucceeded))
			Expect(a.FinishedAt).NotTo(BeNil())
			Expect(sandbox.Disbursements(a.Reference)).To(Equal(1))
			Expect(meta.IsStatusConditionTrue(done.Status.Conditions, paygatev1.ConditionReady)).To(BeTrue())
			Eventually(func() []string { return eventReasons(ns, p.Name) }).Should(ContainElements(controllers.ReasonDisbursementStarted, controllers.ReasonPayoutSucceeded))

			b := expectLedgerInvariant(ns, m.Name, paygatev1.EnvironmentSandbox)
			Expect(b.Status.Currencies).To(ConsistOf(paygatev1.CurrencyBalance{
				Currency: "TZS", Available: "19250.00", Settled: "29250.00", Reserved: "0.00", PaidOut: "10000.00", SettledPayments: 3,
			}))
			prod := getBalance(Default, ns, m.Name, paygatev1.EnvironmentProduction)
			Expect(prod.Status.Currencies).To(BeEmpty(), "a sandbox payout never touches production money")

			By("telling the merchant once, with the payout's record")
			Eventually(func(g Gomega) {
				d, data := payoutEvent(g, done, webhookevents.PayoutCompleted)
				g.Expect(d.Spec.Source).To(Equal(paygatev1.EventSource{Kind: "Payout", Name: p.Name, UID: string(done.UID)}))
				g.Expect(d.Spec.Environment).To(Equal(paygatev1.EnvironmentSandbox))
				g.Expect(d.OwnerReferences).To(ContainElement(HaveField("UID", done.UID)))
				g.Expect(data).To(Equal(paygate.Payout{
					ID: p.Name, Status: "success", Remark: provider.SandboxRemark,
					Amount: "10000.00", Fee: "100.00", PayableAmount: "9900.00", Currency: "TZS",
					Destination: "+255*******78", Environment: "sandbox",
					CreatedAt: webhookevents.FormatTime(p.Spec.CreatedAt.Time), UpdatedAt: webhookevents.FormatTime(done.Status.UpdatedAt.Time),
				}))
			}).Should(Succeed())
			var deliveries paygatev1.WebhookDeliveryList
			Expect(k8s.List(ctx, &deliveries, client.InNamespace(ns))).To(Succeed())
			n := 0
			for _, d := range deliveries.Items {
				if d.Spec.Source.Name == p.Name {
					n++
				}
			}
			Expect(n).To(Equal(1), "one event per payout")
		})

		It("fails a payout the provider refuses, releases its reservation and sends payout.failed", func() {
			settle(ns, paygatev1.EnvironmentSandbox, gw, 1, "10000")
			p := newPayout(m, paygatev1.EnvironmentSandbox, "1001.00", gw) // the magic amount of INVALID_ACCOUNT
			Expect(k8s.Create(ctx, p)).To(Succeed())
			done := waitPayout(p, paygatev1.PayoutFailed)
			Expect(done.Status.Reason).To(Equal(string(paygatev1.FailureInvalidAccount)))
			Expect(done.Status.Attempt.Code).To(Equal(string(paygatev1.FailureInvalidAccount)))
			b := expectLedgerInvariant(ns, m.Name, paygatev1.EnvironmentSandbox)
			Expect(b.Status.Currencies[0].Available).To(BeEquivalentTo("9750.00"), "the reservation is released")
			Eventually(func(g Gomega) {
				_, data := payoutEvent(g, done, webhookevents.PayoutFailed)
				g.Expect(data.Status).To(Equal("failed"))
				g.Expect(data.Reason).To(Equal(string(paygatev1.FailureInvalidAccount)))
			}).Should(Succeed())
		})

		It("honours a reservation the Balance holds when the pass that wrote it died before marking the payout", func() {
			settle(ns, paygatev1.EnvironmentSandbox, gw, 1, "10000") // 9750.00
			Expect(env.StopManager()).To(Succeed())
			DeferCleanup(func() {
				if _, err := env.StartManager(managerOptions()); err != nil {
					Expect(err.Error()).To(ContainSubstring("already running"))
				}
			})
			// reserved is in the Balance, but its own reservedAt was never written; earlier was
			// created before it but arrives after the crash, and no longer fits.
			reserved := newPayout(m, paygatev1.EnvironmentSandbox, "6000.00", gw)
			earlier := newPayout(m, paygatev1.EnvironmentSandbox, "5000.00", gw)
			earlier.Spec.CreatedAt = metav1.NewMicroTime(reserved.Spec.CreatedAt.Add(-time.Second))
			Expect(k8s.Create(ctx, reserved)).To(Succeed())
			Eventually(func(g Gomega) {
				b := getBalance(g, ns, m.Name, paygatev1.EnvironmentSandbox)
				b.Status.PayoutReservations = []paygatev1.PayoutReservation{{Payout: reserved.Name, Currency: "TZS", Amount: reserved.Spec.Amount}}
				g.Expect(k8s.Status().Update(ctx, b)).To(Succeed())
			}).Should(Succeed())
			Expect(k8s.Create(ctx, earlier)).To(Succeed())

			_, err := env.StartManager(managerOptions())
			Expect(err).NotTo(HaveOccurred())
			waitPayout(reserved, paygatev1.PayoutSuccess)
			done := waitPayout(earlier, paygatev1.PayoutFailed)
			Expect(done.Status.Reason).To(Equal(string(paygatev1.PayoutInsufficientBalance)))
			b := expectLedgerInvariant(ns, m.Name, paygatev1.EnvironmentSandbox)
			Expect(b.Status.Currencies[0].Available).To(BeEquivalentTo("3750.00"))
			Expect(sandbox.Disbursements(reserved.DisbursementReference())).To(Equal(1))
		})

		It("never overdraws: payouts created at once above the balance reserve in creation order, the rest fail", func() {
			settled := settle(ns, paygatev1.EnvironmentSandbox, gw, 10, "10000") // 10 × 9750.00
			Expect(settled.StringFixed(2)).To(Equal("97500.00"))
			const n = 20
			created := make([]*paygatev1.Payout, n)
			for i := range created {
				created[i] = newPayout(m, paygatev1.EnvironmentSandbox, "10000.00", gw)
			}
			var wg sync.WaitGroup
			for _, p := range created {
				wg.Go(func() {
					defer GinkgoRecover()
					Expect(k8s.Create(ctx, p)).To(Succeed())
				})
			}
			wg.Wait()

			// At every moment the payouts that hold money (reserved or paid) fit in the settled
			// balance; a violation fails at once.
			Eventually(func(g Gomega) {
				var pos paygatev1.PayoutList
				g.Expect(k8s.List(ctx, &pos, client.InNamespace(ns))).To(Succeed())
				var held money.Amount
				finished := 0
				for _, p := range pos.Items {
					if p.Status.Phase == paygatev1.PayoutSuccess || p.Reserved() {
						held = held.Add(amountOf(p.Spec.Amount))
					}
					if p.Terminal() {
						finished++
					}
				}
				Expect(held.Cmp(settled)).To(BeNumerically("<=", 0), "payouts holding %s of %s settled", held, settled)
				cb := currencyBalance(g, ns, m.Name, paygatev1.EnvironmentSandbox, "TZS")
				Expect(amountOf(cb.Reserved).Add(amountOf(cb.PaidOut)).Cmp(settled)).To(BeNumerically("<=", 0), "the Balance holds %+v", cb)
				g.Expect(finished).To(Equal(n))
			}, "2m", "20ms").Should(Succeed())

			var success, insufficient []*paygatev1.Payout
			for _, p := range created {
				cur := getPayout(Default, p)
				switch {
				case cur.Status.Phase == paygatev1.PayoutSuccess:
					success = append(success, cur)
				case cur.Status.Reason == string(paygatev1.PayoutInsufficientBalance):
					insufficient = append(insufficient, cur)
					Expect(cur.Status.Attempt).To(BeNil(), "a refused payout is never disbursed")
					Expect(cur.Status.ReservedAt).To(BeNil())
					Eventually(func(g Gomega) {
						ready := meta.FindStatusCondition(getPayout(g, cur).Status.Conditions, paygatev1.ConditionReady)
						g.Expect(ready).NotTo(BeNil())
						g.Expect(ready.Reason).To(Equal(controllers.ReasonPayoutFailed), "Ready says how a refused payout ended")
						g.Expect(ready.Message).To(ContainSubstring(string(paygatev1.PayoutInsufficientBalance)))
					}).Should(Succeed())
				default:
					Fail(fmt.Sprintf("payout %s ended %s %s", cur.Name, cur.Status.Phase, cur.Status.Reason))
				}
			}
			Expect(success).To(HaveLen(9), "9 × 10000.00 fit in 97500.00")
			Expect(insufficient).To(HaveLen(n - 9))
			for _, p := range success {
				Expect(sandbox.Disbursements(p.DisbursementReference())).To(Equal(1))
			}
			b := expectLedgerInvariant(ns, m.Name, paygatev1.EnvironmentSandbox)
			Expect(b.Status.Currencies[0].Available).To(BeEquivalentTo("7500.00"))
			Expect(b.Status.PayoutReservations).To(BeEmpty())
		})
	})

	Context("through the upstream provider", func() {
		var (
			fake *fakeupstream.Server
			gw   *paygatev1.Gateway
			m    *paygatev1.Merchant
		)
		BeforeEach(func() {
			fake, gw = upstreamGateway(ns, withPayouts)
			m = payoutMerchant(ns)
		})

		It("disburses once across a crash between recording the attempt and calling the provider", func() {
			settle(ns, paygatev1.EnvironmentProduction, gw, 2, "20000") // 2 × 19500.00
			Expect(env.StopManager()).To(Succeed())
			DeferCleanup(func() {
				if _, err := env.StartManager(managerOptions()); err != nil {
					Expect(err.Error()).To(ContainSubstring("already running"))
				}
			})
			// Two payouts whose attempts a manager recorded before it died: the first before the
			// provider heard of it, the second after.
			lost := newPayout(m, paygatev1.EnvironmentProduction, "5000.00", gw)
			reached := newPayout(m, paygatev1.EnvironmentProduction, "7000.00", gw)
			for _, p := range []*paygatev1.Payout{lost, reached} {
				Expect(k8s.Create(ctx, p)).To(Succeed())
				p.Status = paygatev1.PayoutStatus{
					Phase: paygatev1.PayoutProcessing, ReservedAt: ptrMicro(clock.Now()),
					Attempt: &paygatev1.DisbursementAttempt{Reference: p.DisbursementReference(), Phase: paygatev1.AttemptInitiating, StartedAt: metav1.NewMicroTime(clock.Now())},
				}
				Expect(k8s.Status().Update(ctx, p)).To(Succeed())
			}
			up, err := provider.NewUpstream(provider.UpstreamConfig{BaseURL: fake.URL(), Token: fake.Token})
			Expect(err).NotTo(HaveOccurred())
			_, err = up.Disburse(ctx, provider.DisbursementRequest{Reference: reached.DisbursementReference(), Phone: settlementNumber,
				Amount: string(reached.Spec.PayableAmount), Currency: "TZS", Gateway: string(gw.Code())})
			Expect(err).NotTo(HaveOccurred())
			Expect(fake.DisbursementsFor(reached.DisbursementReference())).To(Equal(1))

			_, err = env.StartManager(managerOptions())
			Expect(err).NotTo(HaveOccurred())
			for _, p := range []*paygatev1.Payout{lost, reached} {
				done := waitPayout(p, paygatev1.PayoutSuccess)
				Expect(done.Status.Attempt.Phase).To(Equal(paygatev1.AttemptSucceeded))
				Expect(done.Status.Attempt.Reference).To(Equal(p.DisbursementReference()))
			}
			Expect(fake.DisbursementsFor(lost.DisbursementReference())).To(Equal(1), "the lost one is disbursed once, with its recorded reference")
			Expect(fake.DisbursementsFor(reached.DisbursementReference())).To(Equal(1), "the reached one is not disbursed again")
			Expect(fake.Disbursements()).To(Equal(2))
			b := expectLedgerInvariant(ns, m.Name, paygatev1.EnvironmentProduction)
			Expect(b.Status.Currencies[0].Available).To(BeEquivalentTo("27000.00"))
		})

		It("disburses once whatever happens to the provider's answer", func() {
			settle(ns, paygatev1.EnvironmentProduction, gw, 1, "20000")
			for _, tc := range []struct {
				name string
				sc   fakeupstream.Scenario
			}{
				{"ambiguous twice, then success", fakeupstream.Scenario{AmbiguousFor: 2}},
				{"in progress, then success", fakeupstream.Scenario{SettleAfter: time.Second}},
				{"the disburse call times out", fakeupstream.Scenario{PostLatency: 3 * time.Second}},
				{"the connection drops before the answer", fakeupstream.Scenario{DropPostConnection: true}},
				{"the answer is lost in a 500", fakeupstream.Scenario{PostError: http.StatusInternalServerError}},
			} {
				By(tc.name)
				fake.Script(settlementNumber, tc.sc)
				p := newPayout(m, paygatev1.EnvironmentProduction, "1000.00", gw)
				Expect(k8s.Create(ctx, p)).To(Succeed())
				if tc.sc.SettleAfter > 0 {
					Eventually(func(g Gomega) {
						a := getPayout(g, p).Status.Attempt
						g.Expect(a).NotTo(BeNil())
						g.Expect(a.Phase).To(Equal(paygatev1.AttemptPending))
					}).Should(Succeed())
					clock.Step(tc.sc.SettleAfter)
				}
				done := waitPayout(p, paygatev1.PayoutSuccess)
				Expect(fake.DisbursementsFor(p.DisbursementReference())).To(Equal(1), tc.name)
				Expect(done.Status.Attempt.ProviderReference).To(HavePrefix("FKD"))
				Expect(done.Status.Remark).To(BeEmpty(), "no sandbox remark on real money")
			}
			b := expectLedgerInvariant(ns, m.Name, paygatev1.EnvironmentProduction)
			Expect(b.Status.Currencies[0].Available).To(BeEquivalentTo("14500.00"))
		})

		It("flags a disbursement the provider forgets and never disburses it again", func() {
			settle(ns, paygatev1.EnvironmentProduction, gw, 1, "20000")
			fake.Script(settlementNumber, fakeupstream.Scenario{SettleAfter: time.Hour})
			p := newPayout(m, paygatev1.EnvironmentProduction, "3000.00", gw)
			Expect(k8s.Create(ctx, p)).To(Succeed())
			Eventually(func(g Gomega) {
				a := getPayout(g, p).Status.Attempt
				g.Expect(a).NotTo(BeNil())
				g.Expect(a.Phase).To(Equal(paygatev1.AttemptPending))
			}).Should(Succeed())
			forgotten := testutil.ToFloat64(metrics.ForgottenAttempts.WithLabelValues("disbursement", "production"))
			fake.Forget()
			Eventually(func(g Gomega) {
				cur := getPayout(g, p)
				g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, paygatev1.ConditionProviderForgotAttempt)).To(BeTrue(), "status %+v", cur.Status)
				g.Expect(cur.Status.Phase).To(Equal(paygatev1.PayoutProcessing), "money may have moved: it stays open")
			}).Should(Succeed())
			Eventually(func() []string { return eventReasons(ns, p.Name) }).Should(ContainElement(controllers.ReasonProviderForgotAttempt))
			Expect(testutil.ToFloat64(metrics.ForgottenAttempts.WithLabelValues("disbursement", "production"))).To(Equal(forgotten + 1))
			Consistently(func(g Gomega) {
				g.Expect(getPayout(g, p).Status.Phase).To(Equal(paygatev1.PayoutProcessing))
			}, "1s").Should(Succeed())
			Expect(fake.DisbursementsFor(p.DisbursementReference())).To(Equal(1), "never disbursed again")
		})

		It("asks an operator about a disbursement ambiguous too long and ends it as they resolve it", func() {
			settle(ns, paygatev1.EnvironmentProduction, gw, 1, "20000") // 19500.00
			fake.Script(settlementNumber, fakeupstream.Scenario{Outcome: provider.StatusAmbiguous})
			ambiguous := func(amount string) *paygatev1.Payout {
				p := newPayout(m, paygatev1.EnvironmentProduction, amount, gw)
				Expect(k8s.Create(ctx, p)).To(Succeed())
				Eventually(func(g Gomega) {
					a := getPayout(g, p).Status.Attempt
					g.Expect(a).NotTo(BeNil())
					g.Expect(a.Phase).To(Equal(paygatev1.AttemptAmbiguous))
					g.Expect(a.AmbiguousSince).NotTo(BeNil())
				}).Should(Succeed())
				return p
			}
			tooLong := func(g Gomega, p *paygatev1.Payout) *metav1.Condition {
				return meta.FindStatusCondition(getPayout(g, p).Status.Conditions, paygatev1.ConditionAmbiguousTooLong)
			}
			failed, paid := ambiguous("4000.00"), ambiguous("3000.00")
			Consistently(func(g Gomega) {
				g.Expect(tooLong(g, failed)).To(BeNil())
			}, "500ms").Should(Succeed())
			// While open, the reservations count.
			b := expectLedgerInvariant(ns, m.Name, paygatev1.EnvironmentProduction)
			Expect(b.Status.Currencies[0].Available).To(BeEquivalentTo("12500.00"))
			Expect(b.Status.PayoutReservations).To(HaveLen(2))

			By("rebuilding the reservations from the payouts when the Balance is lost")
			Expect(k8s.Delete(ctx, b)).To(Succeed())
			Eventually(func(g Gomega) {
				g.Expect(getBalance(g, ns, m.Name, paygatev1.EnvironmentProduction).UID).NotTo(Equal(b.UID))
			}).Should(Succeed())
			b = expectLedgerInvariant(ns, m.Name, paygatev1.EnvironmentProduction)
			Expect(b.Status.Currencies[0].Available).To(BeEquivalentTo("12500.00"))
			Expect(b.Status.PayoutReservations).To(HaveLen(2))

			clock.Step(payoutAmbiguousAfter + time.Second)
			for _, p := range []*paygatev1.Payout{failed, paid} {
				Eventually(func(g Gomega) {
					c := tooLong(g, p)
					g.Expect(c).NotTo(BeNil())
					g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
					g.Expect(c.Message).To(ContainSubstring(paygatev1.AnnotationResolvePayout))
				}).Should(Succeed())
				Expect(getPayout(Default, p).Status.Phase).To(Equal(paygatev1.PayoutProcessing), "the controller keeps asking; it never decides alone")
			}
			Eventually(func() []string { return eventReasons(ns, failed.Name) }).Should(ContainElement(controllers.ReasonPayoutAmbiguous))

			By("resolving one as failed: RESOLVED_FAILED, the reservation released")
			annotatePayout(failed, paygatev1.AnnotationResolvePayout, "failed")
			done := waitPayout(failed, paygatev1.PayoutFailed)
			Expect(done.Status.Reason).To(Equal(string(paygatev1.PayoutResolvedFailed)))
			Expect(done.Status.Attempt.Phase).To(Equal(paygatev1.AttemptAmbiguous), "the provider never answered finally: the attempt keeps its phase")
			Expect(done.Watched(clock.Now())).To(BeTrue(), "and stays watched (docs/payouts.md)")
			c := meta.FindStatusCondition(done.Status.Conditions, paygatev1.ConditionAmbiguousTooLong)
			Expect(c.Status).To(Equal(metav1.ConditionFalse))
			Expect(c.Reason).To(Equal(controllers.ReasonPayoutResolved))
			Expect(expectLedgerInvariant(ns, m.Name, paygatev1.EnvironmentProduction).Status.Currencies[0].Available).To(BeEquivalentTo("16500.00"))

			By("resolving the other as success: paid out")
			annotatePayout(paid, paygatev1.AnnotationResolvePayout, "success")
			waitPayout(paid, paygatev1.PayoutSuccess)
			b = expectLedgerInvariant(ns, m.Name, paygatev1.EnvironmentProduction)
			Expect(b.Status.Currencies[0].Available).To(BeEquivalentTo("16500.00"))
			Expect(b.Status.Currencies[0].PaidOut).To(BeEquivalentTo("3000.00"))
			for _, p := range []*paygatev1.Payout{failed, paid} {
				Expect(fake.DisbursementsFor(p.DisbursementReference())).To(Equal(1))
			}
			Eventually(func(g Gomega) {
				_, data := payoutEvent(g, getPayout(g, failed), webhookevents.PayoutFailed)
				g.Expect(data.Reason).To(Equal(string(paygatev1.PayoutResolvedFailed)))
				payoutEvent(g, getPayout(g, paid), webhookevents.PayoutCompleted)
			}).Should(Succeed())

			By("ignoring a resolution once the payout is final")
			annotatePayout(paid, paygatev1.AnnotationResolvePayout, "failed")
			Consistently(func(g Gomega) {
				g.Expect(getPayout(g, paid).Status.Phase).To(Equal(paygatev1.PayoutSuccess))
			}, "500ms").Should(Succeed())
		})

		It("asks an operator even while the provider cannot be asked, and lets them end it", func() {
			settle(ns, paygatev1.EnvironmentProduction, gw, 1, "20000")
			fake.Script(settlementNumber, fakeupstream.Scenario{Outcome: provider.StatusAmbiguous})
			p := newPayout(m, paygatev1.EnvironmentProduction, "2000.00", gw)
			Expect(k8s.Create(ctx, p)).To(Succeed())
			Eventually(func(g Gomega) {
				a := getPayout(g, p).Status.Attempt
				g.Expect(a).NotTo(BeNil())
				g.Expect(a.Phase).To(Equal(paygatev1.AttemptAmbiguous))
			}).Should(Succeed())
			fake.Fail(http.StatusServiceUnavailable)
			DeferCleanup(fake.Recover)
			Eventually(func(g Gomega) {
				ready := meta.FindStatusCondition(getPayout(g, p).Status.Conditions, paygatev1.ConditionReady)
				g.Expect(ready).NotTo(BeNil())
				g.Expect(ready.Reason).To(Equal(controllers.ReasonProviderUnreachable))
			}).Should(Succeed())

			clock.Step(payoutAmbiguousAfter + time.Second)
			touchPayout(p)
			Eventually(func(g Gomega) {
				g.Expect(meta.IsStatusConditionTrue(getPayout(g, p).Status.Conditions, paygatev1.ConditionAmbiguousTooLong)).To(BeTrue())
			}).Should(Succeed())

			annotatePayout(p, paygatev1.AnnotationResolvePayout, "failed")
			done := waitPayout(p, paygatev1.PayoutFailed)
			Expect(done.Status.Reason).To(Equal(string(paygatev1.PayoutResolvedFailed)))
			fake.Recover()
			expectLedgerInvariant(ns, m.Name, paygatev1.EnvironmentProduction)
		})

		It("asks an operator about a disbursement the provider never answered, and lets them end it only then", func() {
			settle(ns, paygatev1.EnvironmentProduction, gw, 1, "20000")
			fake.Fail(http.StatusServiceUnavailable)
			DeferCleanup(fake.Recover)
			p := newPayout(m, paygatev1.EnvironmentProduction, "2000.00", gw)
			Expect(k8s.Create(ctx, p)).To(Succeed())
			Eventually(func(g Gomega) {
				a := getPayout(g, p).Status.Attempt
				g.Expect(a).NotTo(BeNil())
				g.Expect(a.Phase).To(Equal(paygatev1.AttemptInitiating))
			}).Should(Succeed())
			// Too early: the attempt was never answered and no operator was asked yet.
			annotatePayout(p, paygatev1.AnnotationResolvePayout, "failed")
			Consistently(func(g Gomega) {
				g.Expect(getPayout(g, p).Status.Phase).To(Equal(paygatev1.PayoutProcessing))
			}, "2s").Should(Succeed())

			clock.Step(payoutAmbiguousAfter + time.Second)
			touchPayout(p)
			done := waitPayout(p, paygatev1.PayoutFailed)
			Expect(done.Status.Reason).To(Equal(string(paygatev1.PayoutResolvedFailed)))
			Expect(meta.FindStatusCondition(done.Status.Conditions, paygatev1.ConditionAmbiguousTooLong)).NotTo(BeNil())
			fake.Recover()
			expectLedgerInvariant(ns, m.Name, paygatev1.EnvironmentProduction)
		})

		It("fails a payout whose gate closed after it was accepted, moving no money", func() {
			settle(ns, paygatev1.EnvironmentProduction, gw, 1, "20000")
			setMerchant := func(change func(*paygatev1.Merchant)) {
				Eventually(func(g Gomega) {
					cur := getMerchant(g, ns, m.Name)
					change(cur)
					g.Expect(k8s.Update(ctx, cur)).To(Succeed())
				}).Should(Succeed())
				// The manager has seen the change once the merchant controller observed it.
				Eventually(func(g Gomega) {
					cur := getMerchant(g, ns, m.Name)
					g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
				}).Should(Succeed())
			}
			for _, tc := range []struct {
				name    string
				close   func(*paygatev1.Merchant)
				reopen  func(*paygatev1.Merchant)
				message string
			}{
				{"KYB back to pending",
					func(m *paygatev1.Merchant) { m.Spec.KYBStatus = paygatev1.KYBPending },
					func(m *paygatev1.Merchant) { m.Spec.KYBStatus = paygatev1.KYBApproved }, "KYB"},
				{"the business disabled",
					func(m *paygatev1.Merchant) { m.Spec.BusinessStatus = paygatev1.BusinessDisabled },
					func(m *paygatev1.Merchant) { m.Spec.BusinessStatus = paygatev1.BusinessApproved }, "business"},
				{"the settlement number changed",
					func(m *paygatev1.Merchant) { m.Spec.SettlementNumber = "+255713999999" },
					func(m *paygatev1.Merchant) { m.Spec.SettlementNumber = settlementNumber }, "settlement number changed"},
			} {
				By(tc.name)
				p := newPayout(getMerchant(Default, ns, m.Name), paygatev1.EnvironmentProduction, "5000.00", gw)
				setMerchant(tc.close)
				Expect(k8s.Create(ctx, p)).To(Succeed())
				done := waitPayout(p, paygatev1.PayoutFailed)
				Expect(done.Status.Reason).To(Equal(string(paygatev1.PayoutRejected)))
				Expect(done.Status.ReservedAt).NotTo(BeNil(), "the balance reserved it; the payout controller refused it")
				Expect(done.Status.Attempt).To(BeNil(), "no disbursement was recorded")
				Eventually(func() []string { return eventMessages(ns, p.Name) }).Should(ContainElement(ContainSubstring(tc.message)))
				b := expectLedgerInvariant(ns, m.Name, paygatev1.EnvironmentProduction)
				Expect(b.Status.Currencies[0].Available).To(BeEquivalentTo("19500.00"), "the reservation is released")
				Eventually(func(g Gomega) {
					_, data := payoutEvent(g, done, webhookevents.PayoutFailed)
					g.Expect(data.Reason).To(Equal(string(paygatev1.PayoutRejected)))
				}).Should(Succeed())
				setMerchant(tc.reopen)
			}
			Expect(fake.Disbursements()).To(BeZero(), "no money moved")
		})
	})
})

func ptrMicro(t time.Time) *metav1.MicroTime { mt := metav1.NewMicroTime(t); return &mt }

// eventMessages are the notes of the Kubernetes events about the object name in ns.
func eventMessages(ns, name string) []string {
	var out []string
	for _, e := range listEvents(ns) {
		if e.Regarding.Name == name {
			out = append(out, e.Note)
		}
	}
	return out
}

func listEvents(ns string) []eventsv1.Event {
	var list eventsv1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}
