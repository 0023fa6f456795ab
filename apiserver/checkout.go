// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"bytes"
	"context"
	"embed"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/eligibility"
	"github.com/paygate/paygate/internal/index"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/phone"
)

// The hosted checkout page: server-rendered HTML, a little JavaScript that only makes it faster,
// no assets from other hosts, and a strict Content-Security-Policy (docs/checkout.md).

//go:embed checkout/page.html checkout/checkout.css checkout/checkout.js
var checkoutAssets embed.FS

var checkoutPage = template.Must(template.ParseFS(checkoutAssets, "checkout/page.html"))

const checkoutCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

type checkoutGateway struct {
	Code, Name string
	Checked    bool
}

type checkoutLang struct {
	Code, Name, URL string
	Current         bool
}

type checkoutView struct {
	Lang, State                       string
	T                                 checkoutText
	Langs                             []checkoutLang
	Sandbox                           bool
	MerchantName, Amount              string
	Description                       string
	Gateways                          []checkoutGateway
	Phone, MaskedPhone, Error, Notice string
	Expires, Signature                string
	PayURL, StatusURL, CancelURL      string
	ContinueURL, RefreshURL           string
	RefreshSeconds                    int
}

func (s *Server) checkoutRoutes() {
	s.mux.HandleFunc("GET /checkout-assets/{file}", s.checkoutStatic)
	s.mux.HandleFunc("GET /checkout/{trx_id}", s.checkoutShow)
	s.mux.HandleFunc("POST /checkout/{trx_id}/pay", s.checkoutPay)
	s.mux.HandleFunc("GET /checkout/{trx_id}/status", s.checkoutStatus)
}

func (s *Server) checkoutStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	if name != "checkout.css" && name != "checkout.js" {
		s.noRoute(w, r)
		return
	}
	b, _ := checkoutAssets.ReadFile("checkout/" + name)
	ctype := "text/css; charset=utf-8"
	if strings.HasSuffix(name, ".js") {
		ctype = "text/javascript; charset=utf-8"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(b)
}

// checkoutPayment finds the payment a signed link names. It returns nil when the link is
// tampered, unknown or not Paygate's: the page then shows nothing of any merchant. pushed is the
// push request the customer has just made (0 when none): a cache that has not seen it yet is read
// past, so the page after "Pay" shows the waiting state, not the form again (read-your-writes,
// whichever replica answers).
func (s *Server) checkoutPayment(ctx context.Context, trxID, expires, sig string, pushed int32) (*paygatev1.Payment, error) {
	if !trxIDPattern.MatchString(trxID) || len(sig) != 64 || len(expires) > 12 {
		return nil, nil
	}
	if !s.checkoutSignatureValid(trxID, expires, sig) {
		return nil, nil
	}
	var list paygatev1.PaymentList
	if err := s.opts.Cache.List(ctx, &list, client.MatchingFields{index.PaymentName: trxID}); err != nil {
		return nil, err
	}
	stale := len(list.Items) == 1 && pushed > 0 &&
		(list.Items[0].Spec.PushRequest == nil || list.Items[0].Spec.PushRequest.Sequence < pushed)
	if len(list.Items) == 0 || stale { // created or pushed a moment ago: read past the cache
		if err := s.opts.APIReader.List(ctx, &list, client.MatchingFields{"metadata.name": trxID}); err != nil {
			return nil, err
		}
	}
	if len(list.Items) != 1 || strconv.FormatInt(list.Items[0].Spec.ExpiresAt.Unix(), 10) != expires {
		return nil, nil
	}
	return &list.Items[0], nil
}

func checkoutHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", checkoutCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

func (s *Server) renderCheckout(w http.ResponseWriter, status int, v *checkoutView) {
	var buf bytes.Buffer
	if err := checkoutPage.Execute(&buf, v); err != nil {
		s.opts.Log.Error(err, "Rendering the checkout page")
		status, v = http.StatusInternalServerError, &checkoutView{Lang: v.Lang, T: v.T, State: "invalid"}
		buf.Reset()
		_ = checkoutPage.Execute(&buf, v)
	}
	checkoutHeaders(w)
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// checkoutView builds the page of a payment in its current state.
func (s *Server) checkoutView(ctx context.Context, r *http.Request, p *paygatev1.Payment, lang, expires, sig string) (*checkoutView, int) {
	t := checkoutLanguages[lang]
	v := &checkoutView{Lang: lang, T: t, State: "invalid"}
	v.Langs = make([]checkoutLang, 0, len(checkoutLanguageNames))
	for _, l := range checkoutLanguageNames {
		q := url.Values{"expires": {expires}, "signature": {sig}, "lang": {l.Code}}
		path := r.URL.Path
		if p != nil {
			path = "/checkout/" + p.Name
		}
		v.Langs = append(v.Langs, checkoutLang{Code: l.Code, Name: l.Name, URL: path + "?" + q.Encode(), Current: l.Code == lang})
	}
	if p == nil {
		return v, http.StatusNotFound
	}
	q := url.Values{"expires": {expires}, "signature": {sig}, "lang": {lang}}.Encode()
	base := "/checkout/" + p.Name
	v.Expires, v.Signature = expires, sig
	v.PayURL = base + "/pay"
	v.Sandbox = p.Spec.Environment == paygatev1.EnvironmentSandbox
	v.Description = p.Spec.Description
	v.Amount = checkoutAmount(p)
	m := &paygatev1.Merchant{}
	if err := s.opts.Cache.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.MerchantRef.Name}, m); err == nil {
		v.MerchantName = m.Spec.DisplayName
	}
	v.CancelURL = withResult(p.Spec.CancelRedirect, p.Name, "cancelled")
	now := s.opts.Clock.Now()
	switch {
	case p.Phase() == paygatev1.PaymentSuccess:
		v.State, v.ContinueURL = "success", withResult(p.Spec.SuccessRedirect, p.Name, "success")
		v.RefreshURL, v.RefreshSeconds = v.ContinueURL, 3
	case p.Expired(now): // as the payment controller decides it
		v.State, v.ContinueURL = "expired", withResult(p.Spec.CancelRedirect, p.Name, "expired")
		return v, http.StatusGone
	case p.Phase() == paygatev1.PaymentFailed:
		v.State, v.Error = "failed", t.failure(p.Status.Reason)
		v.ContinueURL = withResult(p.Spec.CancelRedirect, p.Name, "failed")
		v.RefreshURL, v.RefreshSeconds = v.ContinueURL, 5
	case p.AwaitingCustomer():
		v.State, v.StatusURL = "waiting", base+"/status?"+q
		if p.Spec.PushRequest != nil {
			v.MaskedPhone = phone.Mask(string(p.Spec.PushRequest.Phone))
		}
		v.RefreshURL, v.RefreshSeconds = base+"?"+q, 5
	default:
		v.State = "form"
		v.Gateways = s.checkoutGateways(ctx, p)
		if len(v.Gateways) == 0 {
			v.Error = t.ErrNoGateway
		} else if len(v.Gateways) == 1 {
			v.Gateways[0].Checked = true
		}
	}
	return v, http.StatusOK
}

// checkoutAmount is the payment's amount as people in the currency's country read it
// ("TZS 1,500,000", "KES 1,500.50"; money.FormatAmount). An amount that does not parse is shown
// as stored, never as another amount.
func checkoutAmount(p *paygatev1.Payment) string {
	cur, ok := money.LookupCurrency(string(p.Spec.Currency))
	a, err := money.ParseAmount(string(p.Spec.Amount))
	if !ok || err != nil {
		return string(p.Spec.Currency) + " " + string(p.Spec.Amount)
	}
	return money.FormatAmount(a, cur)
}

// checkoutGateways are the payment's eligible gateways that still serve it (eligibility.Serves,
// as the payment controller decides before it pushes), in the order the payment recorded them:
// the checkout order of eligibility.Order (the merchant's selection, else by display name and
// code), which the merchant's status shows too.
func (s *Server) checkoutGateways(ctx context.Context, p *paygatev1.Payment) []checkoutGateway {
	var out []checkoutGateway
	for _, code := range p.Spec.Gateways {
		gw := &paygatev1.Gateway{}
		if err := s.opts.Cache.Get(ctx, client.ObjectKey{Name: string(code)}, gw); err != nil || !eligibility.Serves(gw, eligibility.RequestOf(p)) {
			continue
		}
		out = append(out, checkoutGateway{Code: gw.Name, Name: gw.Spec.DisplayName})
	}
	return out
}

// withResult adds the outcome to a merchant redirect: ?trx_id=…&status=…. Merchants verify it
// with the API before fulfilling; it only tells them which payment the customer comes back from.
func withResult(raw, trxID, status string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	q.Set("trx_id", trxID)
	q.Set("status", status)
	u.RawQuery = q.Encode()
	return u.String()
}

func (s *Server) checkoutShow(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lang := checkoutLanguage(q.Get("lang"), r.Header.Get("Accept-Language"))
	p, err := s.checkoutPayment(r.Context(), r.PathValue("trx_id"), q.Get("expires"), q.Get("signature"), pushedSequence(q.Get("pushed")))
	if err != nil {
		s.opts.Log.Error(err, "Finding a checkout payment")
		p = nil
	}
	v, status := s.checkoutView(r.Context(), r, p, lang, q.Get("expires"), q.Get("signature"))
	s.renderCheckout(w, status, v)
}

// checkoutPay records the push the customer asked for, then shows the waiting page (post,
// redirect, get), or the form again with a message.
func (s *Server) checkoutPay(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.renderCheckout(w, http.StatusBadRequest, &checkoutView{Lang: "en", T: checkoutLanguages["en"], State: "invalid"})
		return
	}
	lang := checkoutLanguage(r.PostForm.Get("lang"), r.Header.Get("Accept-Language"))
	t := checkoutLanguages[lang]
	expires, sig := r.PostForm.Get("expires"), r.PostForm.Get("signature")
	p, err := s.checkoutPayment(r.Context(), r.PathValue("trx_id"), expires, sig, 0)
	if err != nil || p == nil {
		v, status := s.checkoutView(r.Context(), r, nil, lang, expires, sig)
		s.renderCheckout(w, status, v)
		return
	}
	gateway, number := r.PostForm.Get("gateway"), strings.TrimSpace(r.PostForm.Get("phone"))
	formError, pushed := "", ""
	switch {
	case gateway == "": // a gateway that is not the payment's is refused by requestPush
		formError = t.ErrGateway
	case number == "":
		formError = t.ErrPhone
	}
	if formError == "" {
		pushedPayment, apiErr := s.requestPush(r.Context(), func(live bool) (*paygatev1.Payment, error) {
			if live {
				fresh := &paygatev1.Payment{}
				return fresh, s.opts.APIReader.Get(r.Context(), client.ObjectKeyFromObject(p), fresh)
			}
			return p, nil
		}, number, paygatev1.GatewayCode(gateway))
		switch {
		case apiErr == nil:
			s.opts.Log.Info("Checkout push requested", "trxID", p.Name, "gateway", gateway, "customerPhone", phone.Mask(number))
			pushed = strconv.Itoa(int(pushedPayment.Spec.PushRequest.Sequence))
		case apiErr.Status == http.StatusUnprocessableEntity:
			formError = t.ErrPhone
			if _, bad := apiErr.Errors["gateway"]; bad {
				formError = t.ErrGateway
			}
		}
	}
	if formError != "" {
		v, _ := s.checkoutView(r.Context(), r, p, lang, expires, sig)
		if v.State == "form" {
			v.Error, v.Phone = formError, number
			for i := range v.Gateways {
				v.Gateways[i].Checked = v.Gateways[i].Code == gateway
			}
			s.renderCheckout(w, http.StatusUnprocessableEntity, v)
			return
		}
	}
	next := url.Values{"expires": {expires}, "signature": {sig}, "lang": {lang}}
	if pushed != "" {
		next.Set("pushed", pushed)
	}
	http.Redirect(w, r, "/checkout/"+p.Name+"?"+next.Encode(), http.StatusSeeOther)
}

// pushedSequence reads the page's "pushed" parameter: the sequence of the push request the
// customer has just made, 0 when absent or not a small positive number.
func pushedSequence(raw string) int32 {
	n, err := strconv.ParseInt(raw, 10, 32)
	if err != nil || n < 1 {
		return 0
	}
	return int32(n)
}

// checkoutStatus lets the page's script follow the payment: final, where to go, what to say.
func (s *Server) checkoutStatus(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lang := checkoutLanguage(q.Get("lang"), r.Header.Get("Accept-Language"))
	p, err := s.checkoutPayment(r.Context(), r.PathValue("trx_id"), q.Get("expires"), q.Get("signature"), 0)
	if err != nil || p == nil {
		writeError(w, &APIError{Status: http.StatusNotFound, Label: LabelNotFound, Message: "Unknown payment link."})
		return
	}
	v, _ := s.checkoutView(r.Context(), r, p, lang, q.Get("expires"), q.Get("signature"))
	out := map[string]any{"status": string(p.Phase()), "final": false}
	switch v.State {
	case "success":
		out["final"], out["redirect"], out["message"] = true, v.ContinueURL, v.T.Success
	case "failed":
		// The page shows the reason before leaving: go back to it.
		out["final"], out["redirect"], out["message"] = true, "/checkout/"+p.Name+"?"+r.URL.RawQuery, v.Error
	case "expired":
		out["final"], out["redirect"] = true, "/checkout/"+p.Name+"?"+r.URL.RawQuery
	}
	writeJSON(w, http.StatusOK, out)
}
