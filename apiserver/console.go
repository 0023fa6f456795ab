// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/console"
	"github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/pkg/paygate"
)

// +kubebuilder:rbac:groups=paygate.dev,resources=consoleusers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=paygate.dev,resources=consoleusers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=consolesessions,verbs=get;list;create;delete;deletecollection
// +kubebuilder:rbac:groups=paygate.dev,resources=consolesessions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=consoleauditrecords,verbs=get;list;create
// +kubebuilder:rbac:groups=paygate.dev,resources=webhookdeliveries,verbs=get
// +kubebuilder:rbac:groups=paygate.dev,resources=gatewayselections,verbs=create;update
// +kubebuilder:rbac:groups=paygate.dev,resources=merchantchanges,verbs=get;create;delete

// The console's credentials Secrets are written only in the apiserver's own namespace, by a Role
// written by hand (config/rbac/apiserver/console_secrets_role.yaml, the chart's
// apiserver-console-rbac.yaml): the generated ClusterRole only reads Secrets.

// ConsoleOptions configure the merchant console the apiserver serves under /console
// (docs/console.md).
type ConsoleOptions struct {
	// Disabled turns the console off: /console answers 404 like any other unknown path.
	Disabled bool
	// IdleTimeout and AbsoluteTimeout bound a console session (defaults 30 minutes and 12
	// hours).
	IdleTimeout, AbsoluteTimeout time.Duration
	// OIDC, when set, adds sign-in through the installation's OpenID Connect provider.
	OIDC *console.OIDCOptions
	// SecretsNamespace is where the console keeps its users' credentials Secrets: the apiserver's
	// own namespace (default paygate-system).
	SecretsNamespace string
}

// DefaultConsoleSecretsNamespace is where the console keeps credentials Secrets when the
// apiserver's namespace is not known.
const DefaultConsoleSecretsNamespace = "paygate-system"

// mountConsole serves the console under /console when it is on and the apiserver has a cache and
// a full client (the unit tests' servers without them have no console).
func (s *Server) mountConsole() {
	w, ok := s.opts.Writer.(client.Client)
	if s.opts.Console.Disabled || s.opts.Cache == nil || s.opts.APIReader == nil || !ok {
		return
	}
	s.console = console.New(console.Options{
		Cache: s.opts.Cache, APIReader: s.opts.APIReader, Writer: w, Records: consoleRecords{s}, Clock: s.opts.Clock,
		PublicURL: s.opts.PublicURL, TrustedProxies: s.opts.TrustedProxies,
		IdleTimeout: s.opts.Console.IdleTimeout, AbsoluteTimeout: s.opts.Console.AbsoluteTimeout, OIDC: s.opts.Console.OIDC,
		SecretsNamespace: cmpOr(s.opts.Console.SecretsNamespace, DefaultConsoleSecretsNamespace),
		Log:              s.opts.Log.WithName("console"),
	})
	s.mux.Handle(console.Prefix, s.console)
	s.mux.Handle(console.Prefix+"/", s.console)
}

// Console is the merchant console this server serves (nil when it is off).
func (s *Server) Console() http.Handler {
	if s.console == nil {
		return nil
	}
	return s.console
}

// consoleRecords are the merchant API's records for the console: the same lists, indexes and
// archive as the API's own answers.
type consoleRecords struct{ s *Server }

func (r consoleRecords) ListPayments(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment, f console.PaymentFilter,
	limit, offset int) ([]paygate.Payment, int, error) {
	q, err := consolePaymentQuery(m, f)
	if err != nil {
		return nil, 0, err
	}
	page, total, err := r.s.paymentsPage(ctx, &caller{merchant: m, env: env}, q, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	out := make([]paygate.Payment, 0, len(page))
	for i := range page {
		rec, err := r.s.paymentRecord(page[i].DeepCopy())
		if err != nil {
			return nil, 0, namedError("payment", &page[i], err)
		}
		out = append(out, rec)
	}
	return out, total, nil
}

func (r consoleRecords) GetPayment(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment, trxID string) (paygate.Payment, *paygatev1.Payment, bool, error) {
	p, err := r.s.payment(ctx, &caller{merchant: m, env: env}, trxID, false)
	if err != nil || p == nil {
		return paygate.Payment{}, nil, false, err
	}
	rec, err := r.s.paymentRecord(p)
	if err != nil {
		return paygate.Payment{}, nil, false, namedError("payment", p, err)
	}
	return rec, p, true, nil
}

// WebhookDeliveries reads the deliveries of p's events by their names (a payment has at most one
// settlement event), live; an archived delivery is not shown.
func (r consoleRecords) WebhookDeliveries(ctx context.Context, m *paygatev1.Merchant, p *paygatev1.Payment) ([]paygatev1.WebhookDelivery, error) {
	var out []paygatev1.WebhookDelivery
	for _, typ := range []string{events.PaymentCompleted, events.PaymentFailed} {
		for _, name := range events.DeliveryNames(string(p.UID), typ) {
			d := paygatev1.WebhookDelivery{}
			err := r.s.opts.APIReader.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, &d)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading webhook delivery %s: %w", name, err)
			}
			if d.Spec.MerchantRef.Name == m.Name {
				out = append(out, d)
			}
			break
		}
	}
	return out, nil
}

// APIList answers one of the merchant API's lists (payouts, refunds, subscriptions, invoices) for
// m in env, as the API would answer GET /api/v1/<list>?<query>: it runs the API's own handler and
// decodes its page into items (a pointer to a slice of the pkg/paygate type). A query the API
// refuses is an error that says why.
func (r consoleRecords) APIList(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment, list string,
	query url.Values, items any) (int, error) {
	h := map[string]http.HandlerFunc{"payouts": r.s.listPayouts, "refunds": r.s.listRefunds,
		"subscriptions": r.s.listSubscriptions, "invoices": r.s.listInvoices}[list]
	if h == nil {
		return 0, fmt.Errorf("no API list %q", list)
	}
	req, err := http.NewRequestWithContext(context.WithValue(ctx, callerKey{}, &caller{merchant: m, env: env}),
		http.MethodGet, "/api/v1/"+list+"?"+query.Encode(), nil)
	if err != nil {
		return 0, fmt.Errorf("building the %s list: %w", list, err)
	}
	w := &bufferedAnswer{header: http.Header{}}
	h(w, req)
	if w.status != 0 && w.status != http.StatusOK {
		return 0, &console.ListRefused{Status: w.status, Body: w.body.String()}
	}
	out := struct {
		Data       any `json:"data"`
		Pagination struct {
			Total int `json:"total"`
		} `json:"pagination"`
	}{Data: items}
	dec := json.NewDecoder(&w.body)
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return 0, fmt.Errorf("decoding the %s list: %w", list, err)
	}
	return out.Pagination.Total, nil
}

// APIWrite runs one of the merchant API's writes (console.APIRefund, APIPayoutPreview, APIPayout)
// for m in env with body and idempotencyKey, exactly as a signed request of the merchant would
// (the API's own handler, its rules and its idempotency), and returns its status and answer.
func (r consoleRecords) APIWrite(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment, write console.APIWrite,
	trxID string, body []byte, idempotencyKey string) (int, []byte, error) {
	var (
		path    string
		handler http.HandlerFunc
	)
	switch write {
	case console.APIRefund:
		path, handler = "/api/v1/payments/"+url.PathEscape(trxID)+"/refunds", r.s.createRefund
	case console.APIPayoutPreview:
		path, handler = "/api/v1/payouts/preview", r.s.previewPayout
	case console.APIPayout:
		path, handler = "/api/v1/payouts", r.s.createPayout
	case console.APIRedeliver:
		path, handler = "/api/v1/events/"+url.PathEscape(trxID)+"/redeliver", r.s.redeliverEvent
	default:
		return 0, nil, fmt.Errorf("no API write %q", write)
	}
	req, err := http.NewRequestWithContext(context.WithValue(ctx, callerKey{}, &caller{merchant: m, env: env, body: body}),
		http.MethodPost, path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("building the %s request: %w", write, err)
	}
	req.SetPathValue("trx_id", trxID)
	req.SetPathValue("id", trxID)
	req.Header.Set("Content-Type", "application/json")
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	w := &bufferedAnswer{header: http.Header{}}
	handler(w, req)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.status, w.body.Bytes(), nil
}

// bufferedAnswer keeps an answer in memory (the console decodes it).
type bufferedAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedAnswer) Header() http.Header { return b.header }

func (b *bufferedAnswer) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedAnswer) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
