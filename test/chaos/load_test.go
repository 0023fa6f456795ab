// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/pkg/paygate/signing"
)

// lostAfter is how long a client keeps retrying one request (same Idempotency-Key, either
// apiserver) before the request counts as lost.
const lostAfter = 60 * time.Second

// merchant is one merchant of the run, in one environment, with a client per apiserver.
type merchant struct {
	name, ns   string
	env        paygatev1.Environment
	obj        *paygatev1.Merchant
	set        credentials.Set
	clients    []*paygate.Client
	settlement string
}

// request is one merchant request of the load, with every try it took.
type request struct {
	kind       string // payment, hosted, push, payout, refund, refund race, subscription, advance, read, history
	merchant   string
	env        paygatev1.Environment
	key        string // Idempotency-Key ("" for none)
	tries      int
	timeouts   int // tries that ended without an answer (client timeout, refused, reset)
	retryable  int // tries answered 5xx, 429 or "key busy"
	shortFirst bool
	status     int    // the definitive answer's HTTP status; 0 while none
	label      string // the error label of a refusal
	detail     string // its message and field errors
	id         string // what the answer named: trx_id, payout id, refund id, subscription id
	definitive bool
	started    time.Time
	took       time.Duration
	// unavailable counts the tries answered 503 (the archive could not be read: docs/archive.md,
	// Reads in the API server); retried like any 5xx.
	unavailable int
}

// ledger keeps every request of the run.
type ledger struct {
	mu   sync.Mutex
	reqs []*request
}

func (l *ledger) add(r *request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r)
}

func (l *ledger) all() []*request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*request(nil), l.reqs...)
}

// sigRecorder remembers every X-Signature the clients send, so the final grep can look for them.
type sigRecorder struct {
	mu   sync.Mutex
	seen map[string]bool
	next http.RoundTripper
}

func (s *sigRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if v := strings.TrimPrefix(req.Header.Get(signing.SignatureHeader), signing.Prefix); v != "" {
		s.mu.Lock()
		s.seen[v] = true
		s.mu.Unlock()
	}
	return s.next.RoundTrip(req)
}

func (s *sigRecorder) values() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.seen))
	for v := range s.seen {
		out = append(out, v)
	}
	return out
}

// retryableErr tells an answer worth retrying (no answer, a server error, a rate limit, a key a
// concurrent request holds) from a definitive one.
func retryableErr(err error) (status int, label string, retry bool, noAnswer bool) {
	var e *paygate.Error
	if !errors.As(err, &e) {
		return 0, "", true, true
	}
	label = e.Label
	if e.StatusCode >= 500 || e.StatusCode == http.StatusTooManyRequests ||
		(e.StatusCode == http.StatusConflict && strings.Contains(e.Message, "busy")) {
		return e.StatusCode, label, true, false
	}
	return e.StatusCode, label, false, false
}

// send runs one request until it has a definitive answer: a try without an answer (timeout,
// refused connection) or with a retryable one is repeated, with the same Idempotency-Key, against
// the other apiserver. shortFirst gives the first try a client timeout of a few milliseconds, so
// the server often acts on a request whose answer the client never reads.
func (h *harness) send(ctx context.Context, m *merchant, kind, key string, shortFirst bool, fn func(context.Context, *paygate.Client) (string, error)) *request {
	r := &request{kind: kind, merchant: m.name, env: m.env, key: key, shortFirst: shortFirst, started: time.Now()}
	defer func() {
		r.took = time.Since(r.started)
		h.ledger.add(r)
	}()
	first := h.intn(len(m.clients))
	deadline := r.started.Add(lostAfter)
	for try := 0; ; try++ {
		c := m.clients[(first+try)%len(m.clients)]
		timeout := 4 * time.Second
		if try == 0 && shortFirst {
			timeout = time.Duration(2+h.intn(40)) * time.Millisecond
		}
		tctx, cancel := context.WithTimeout(ctx, timeout)
		id, err := fn(tctx, c)
		cancel()
		r.tries++
		if err == nil {
			r.definitive, r.status, r.id = true, http.StatusOK, id
			return r
		}
		status, label, retry, noAnswer := retryableErr(err)
		if !retry {
			r.definitive, r.status, r.label = true, status, label
			var e *paygate.Error
			if errors.As(err, &e) {
				r.detail = fmt.Sprintf("%s %v", e.Message, e.Errors)
			}
			return r
		}
		if noAnswer {
			r.timeouts++
		} else {
			r.retryable++
		}
		if status == http.StatusServiceUnavailable {
			r.unavailable++
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return r
		}
		time.Sleep(time.Duration(100+h.intn(200)) * time.Millisecond)
	}
}

// read is send for a GET whose answer the caller needs (not kept in the ledger's mutations but
// counted like them).
func (h *harness) read(ctx context.Context, m *merchant, fn func(context.Context, *paygate.Client) (string, error)) (string, bool) {
	r := h.send(ctx, m, "read", "", false, fn)
	return r.id, r.definitive && r.status == http.StatusOK
}

// ---- the load ----

// Sandbox magic numbers (docs/sandbox.md): last six digits choose the outcome.
var sandboxPhones = []struct {
	phone  string
	weight int
}{
	{"+255712400100", 6}, // success
	{"+255712400101", 3}, // success
	{"+255711000001", 1}, // INSUFFICIENT_FUNDS
	{"+255711000002", 1}, // PAYMENT_DECLINED
	{"+255711000003", 1}, // CUSTOMER_CANCELLED
	{"+255711000004", 1}, // no answer: expires
	{"+255711000005", 1}, // slow success (may expire first)
	{"+255711000009", 2}, // ambiguous 5 s, then success
}

// Sandbox payout magic amounts (docs/payouts.md): the last three whole digits choose.
var sandboxPayoutAmounts = []string{"1000", "1200", "2001", "2002", "1009", "3000", "1005", "1500.50"}

// Production numbers scripted at the fake upstream (scripts in setupUpstream).
var livePhones = []string{
	"+255713000101", // success at once, callback
	"+255713000102", // success after 1 s, callback twice
	"+255713000103", // fails INSUFFICIENT_FUNDS
	"+255713000104", // ambiguous for 3 queries, then success
	"+255713000105", // the push's answer is lost (500), success
	"+255713000106", // the connection drops on the push, success after 500 ms
	"+255713000107", // never answers: expires
	"+255713000108", // answers after 1.5 s, past the gateway's 1 s timeout
	"+255713000109", // success at once, no callback
	"+255713000110", // accepted, then "not found" for 3 s; success, callback
	"+255713000111", // the connection drops on the push, then "not found" twice: sent again; success
	"+255713000112", // accepted, then "not found" for 30 s, past the deadline: a late success
}

// renewals is how many periods a paying subscriber renews for.
const renewals = 2

// Subscription customers (Tanzanian mobile numbers, as billing requires).
const (
	subscriberPhone = "+255712400200"
	dunningPhone    = "+255711000001" // every charge fails: INSUFFICIENT_FUNDS
)

func (h *harness) pickSandboxPhone() string {
	total := 0
	for _, p := range sandboxPhones {
		total += p.weight
	}
	n := h.intn(total)
	for _, p := range sandboxPhones {
		if n < p.weight {
			return p.phone
		}
		n -= p.weight
	}
	return sandboxPhones[0].phone
}

// loadCounters count what the load did, for the table.
type loadCounters struct {
	seq           atomic.Int64
	flowsStarted  atomic.Int64
	flowsRenewed  atomic.Int64
	flowsSuspend  atomic.Int64
	flowsUnfinish atomic.Int64
}

func (h *harness) nextRef(prefix string) string {
	return fmt.Sprintf("%s-%s-%06d", prefix, h.runID, h.load.seq.Add(1))
}

// createPayment creates one payment (push or hosted) with its ref_trx as Idempotency-Key.
func (h *harness) createPayment(ctx context.Context, m *merchant, phone string, amount int) *request {
	ref := h.nextRef(map[paygatev1.Environment]string{paygatev1.EnvironmentSandbox: "sbx", paygatev1.EnvironmentProduction: "live"}[m.env])
	req := paygate.CreatePaymentRequest{PaymentAmount: json.Number(fmt.Sprint(amount)), CurrencyCode: "TZS", RefTrx: ref,
		Description: "chaos order"}
	kind := "hosted"
	if phone != "" {
		req.PaymentMode, req.CustomerPhone, kind = "push", phone, "payment"
	}
	r := h.send(ctx, m, kind, ref, h.intn(10) == 0, func(ctx context.Context, c *paygate.Client) (string, error) {
		out, err := c.CreatePayment(ctx, req, ref)
		if err != nil {
			return "", err
		}
		return out.Data.TrxID, nil
	})
	h.remember(r, m, "payment")
	return r
}

// createPayout asks for a payout with a fresh Idempotency-Key.
func (h *harness) createPayout(ctx context.Context, m *merchant, amount string) *request {
	key := h.nextRef("po")
	if m.settlement == hidingSettlement {
		// The next disbursement hides, then succeeds or fails (the operator resolves it). A
		// concurrent payout may take this scenario instead: the checks read each operation's own.
		h.fake.Script(hidingSettlement, hidingDisbursement(h.intn(3) == 0))
	}
	r := h.send(ctx, m, "payout", key, h.intn(8) == 0, func(ctx context.Context, c *paygate.Client) (string, error) {
		out, err := c.CreatePayout(ctx, paygate.PayoutRequest{Amount: json.Number(amount)}, key)
		if err != nil {
			return "", err
		}
		return out.ID, nil
	})
	h.remember(r, m, "payout")
	return r
}

// createdRecord is a payment or payout the load created, to read back later.
type createdRecord struct {
	m        *merchant
	kind     string // payment, payout
	id, ref  string
	answered time.Time
}

func (h *harness) remember(r *request, m *merchant, kind string) {
	if r.status != http.StatusOK || r.id == "" {
		return
	}
	h.readMu.Lock()
	defer h.readMu.Unlock()
	h.created = append(h.created, createdRecord{m: m, kind: kind, id: r.id, ref: r.key, answered: time.Now()})
}

// readHistory reads back a payment or payout the load created earlier, most often one old
// enough to be archived (docs/archive.md, Reads in the API server): by id, or a payment by its
// merchant_ref through the list. While the archive is cut such a read answers 503 and is
// retried. Every answer is kept for checkReads; a refusal (a 404 for a record that exists) is
// counted as unexpected.
func (h *harness) readHistory(ctx context.Context) {
	h.readMu.Lock()
	var pick *createdRecord
	if n := len(h.created); n > 0 {
		// Mostly older than the retention: the first three quarters of what was created.
		i := h.intn(max(1, n*3/4))
		if h.intn(4) == 0 {
			i = h.intn(n)
		}
		c := h.created[i]
		pick = &c
	}
	h.readMu.Unlock()
	if pick == nil {
		return
	}
	o := readObservation{ns: pick.m.ns, id: pick.id, ref: pick.ref}
	var fn func(context.Context, *paygate.Client) (string, error)
	switch {
	case pick.kind == "payout":
		o.what = "get payout"
		fn = func(ctx context.Context, c *paygate.Client) (string, error) {
			p, err := c.GetPayout(ctx, pick.id)
			if err != nil {
				return "", err
			}
			o.gotID, o.status = p.ID, p.Status
			return p.ID, nil
		}
	case h.intn(3) == 0:
		o.what = "list payments by merchant_ref"
		fn = func(ctx context.Context, c *paygate.Client) (string, error) {
			l, err := c.ListPayments(ctx, paygate.ListOptions{Limit: 5, MerchantRef: pick.ref})
			if err != nil {
				return "", err
			}
			o.total, o.gotID, o.gotRef, o.status = l.Pagination.Total, "", "", ""
			if len(l.Data) > 0 {
				o.gotID, o.gotRef, o.status = l.Data[0].TrxID, l.Data[0].MerchantRef, l.Data[0].Status
			}
			return o.gotID, nil
		}
	default:
		o.what = "get payment"
		fn = func(ctx context.Context, c *paygate.Client) (string, error) {
			p, err := c.GetPayment(ctx, pick.id)
			if err != nil {
				return "", err
			}
			o.gotID, o.gotRef, o.status = p.TrxID, p.MerchantRef, p.Status
			return p.TrxID, nil
		}
	}
	r := h.send(ctx, pick.m, "history", "", false, fn)
	if r.status == http.StatusOK {
		h.readMu.Lock()
		h.reads = append(h.reads, o)
		h.readMu.Unlock()
	}
}

// op is one step of the steady load.
func (h *harness) op(ctx context.Context) {
	switch m := h.merchants[h.intn(len(h.merchants))]; {
	case m.env == paygatev1.EnvironmentSandbox:
		switch n := h.intn(100); {
		case n < 60:
			h.createPayment(ctx, m, h.pickSandboxPhone(), 1000+100*h.intn(400))
		case n < 75:
			r := h.createPayment(ctx, m, "", 1000+100*h.intn(400))
			if r.status == http.StatusOK && h.intn(2) == 0 {
				// The customer picks mobile money on the hosted page: a push on the pending payment.
				trx := r.id
				h.send(ctx, m, "push", "", false, func(ctx context.Context, c *paygate.Client) (string, error) {
					_, err := c.PushPayment(ctx, trx, h.pickSandboxPhone())
					return trx, err
				})
			}
		default:
			h.createPayout(ctx, m, sandboxPayoutAmounts[h.intn(len(sandboxPayoutAmounts))])
		}
	default:
		if h.intn(100) < 70 {
			h.createPayment(ctx, m, livePhones[h.intn(len(livePhones))], 2000+500*h.intn(40))
		} else {
			h.createPayout(ctx, m, fmt.Sprint(1000+250*h.intn(12)))
		}
	}
}

// runLoad runs workers until ctx ends.
func (h *harness) runLoad(ctx context.Context, workers int, wg *sync.WaitGroup) {
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				h.op(context.WithoutCancel(ctx))
				select {
				case <-ctx.Done():
				case <-time.After(time.Duration(250+h.intn(600)) * time.Millisecond):
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.runBilling(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.runRefunds(ctx)
	}()
	// One reader of earlier records.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			h.readHistory(context.WithoutCancel(ctx))
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(400+h.intn(800)) * time.Millisecond):
			}
		}
	}()
}

// ---- billing ----

// runBilling starts subscription flows now and then (and when a failpoint asks for a charge),
// at most two at a time: a customer who pays and renews when the test clock moves a month, and
// one whose charges fail until the subscription is suspended.
func (h *harness) runBilling(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, 2)
	// The first flow renews (so that, even in the short run, an invoice is old enough to leave
	// etcd), then they alternate.
	dunning := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.billingKick:
			// A failpoint waits for a charge: start one now, whatever runs already.
			wg.Add(1)
			go func() {
				defer wg.Done()
				h.subscriptionFlow(context.WithoutCancel(ctx), ctx, false)
			}()
			continue
		case <-time.After(time.Duration(6+h.intn(8)) * time.Second):
		}
		select {
		case slots <- struct{}{}:
		default:
			continue
		}
		dunning = !dunning
		wg.Add(1)
		go func(dunning bool) {
			defer wg.Done()
			defer func() { <-slots }()
			h.subscriptionFlow(context.WithoutCancel(ctx), ctx, dunning)
		}(dunning)
	}
}

func (h *harness) getSubscription(ctx context.Context, m *merchant, id string) (*paygate.Subscription, bool) {
	var got *paygate.Subscription
	_, ok := h.read(ctx, m, func(ctx context.Context, c *paygate.Client) (string, error) {
		s, err := c.GetSubscription(ctx, id)
		if err == nil {
			got = s
		}
		return id, err
	})
	return got, ok
}

// waitSubscription polls until cond holds (or 90 s, or stop ends and 30 s more passed).
func (h *harness) waitSubscription(ctx, stop context.Context, m *merchant, id string, cond func(*paygate.Subscription) bool) (*paygate.Subscription, bool) {
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if s, ok := h.getSubscription(ctx, m, id); ok && cond(s) {
			return s, true
		}
		if stop.Err() != nil && time.Now().Add(60*time.Second).After(deadline) {
			return nil, false
		}
		time.Sleep(500 * time.Millisecond)
	}
	return nil, false
}

// chargeAhead reports whether the subscription's next charge is the next period's, days ahead
// on its clock (right after a renewal it may still name the charge just made).
func chargeAhead(s *paygate.Subscription) bool {
	if s.NextChargeAt == nil {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, *s.NextChargeAt)
	return err == nil && time.Until(t)-time.Duration(s.TestClockOffsetSeconds)*time.Second > 24*time.Hour
}

func (h *harness) advanceTo(ctx context.Context, m *merchant, s *paygate.Subscription, at string) bool {
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return false
	}
	seconds := int64(time.Until(t)/time.Second) - s.TestClockOffsetSeconds + 2
	if seconds < 1 {
		seconds = 1
	}
	r := h.send(ctx, m, "advance", "", false, func(ctx context.Context, c *paygate.Client) (string, error) {
		_, err := c.AdvanceTestClock(ctx, s.ID, seconds)
		return s.ID, err
	})
	return r.status == http.StatusOK
}

func (h *harness) subscriptionFlow(ctx, stop context.Context, dunning bool) {
	m := h.sandbox
	h.load.flowsStarted.Add(1)
	phone := subscriberPhone
	if dunning {
		phone = dunningPhone
	}
	key := h.nextRef("sub")
	r := h.send(ctx, m, "subscription", key, h.intn(6) == 0, func(ctx context.Context, c *paygate.Client) (string, error) {
		s, err := c.CreateSubscription(ctx, paygate.SubscriptionRequest{PlanCode: planCode, CustomerPhone: phone, TermsShown: planTerms}, key)
		if err != nil {
			return "", err
		}
		return s.ID, nil
	})
	if r.status != http.StatusOK {
		h.load.flowsUnfinish.Add(1)
		return
	}
	id := r.id
	if dunning {
		s, ok := h.waitSubscription(ctx, stop, m, id, func(s *paygate.Subscription) bool {
			return s.Status == "suspended" || (s.ConsecutiveFailures >= 1 && s.NextChargeAt != nil)
		})
		if ok && s.Status != "suspended" {
			h.advanceTo(ctx, m, s, *s.NextChargeAt)
			_, ok = h.waitSubscription(ctx, stop, m, id, func(s *paygate.Subscription) bool { return s.Status == "suspended" })
		}
		if ok {
			h.load.flowsSuspend.Add(1)
		} else {
			h.load.flowsUnfinish.Add(1)
		}
		return
	}
	s, ok := h.waitSubscription(ctx, stop, m, id, func(s *paygate.Subscription) bool {
		return s.Status == "active" && s.NextChargeAt != nil
	})
	// Renew twice: the archiver keeps a subscription's two latest invoices, so the first one
	// leaves etcd (with its charge) only once the third is open.
	for period := 2; ok && period <= renewals+1; period++ {
		h.advanceTo(ctx, m, s, *s.NextChargeAt)
		s, ok = h.waitSubscription(ctx, stop, m, id, func(s *paygate.Subscription) bool {
			return s.Status == "active" && s.CurrentPeriod != nil && *s.CurrentPeriod >= period &&
				(period > renewals || chargeAhead(s))
		})
	}
	if ok {
		h.load.flowsRenewed.Add(1)
	} else {
		h.load.flowsUnfinish.Add(1)
	}
}

// intn is a random number in [0, n), safe for concurrent use.
func (h *harness) intn(n int) int {
	if n <= 1 {
		return 0
	}
	h.rngMu.Lock()
	defer h.rngMu.Unlock()
	return h.rng.IntN(n)
}
