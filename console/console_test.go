// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

// TestEveryTextInBothLanguages: the two catalogues have the same keys, no text is empty, and every
// key a template asks for exists.
func TestEveryTextInBothLanguages(t *testing.T) {
	for key := range texts["en"] {
		if texts["sw"][key] == "" {
			t.Errorf("%q has no Swahili text", key)
		}
	}
	for key := range texts["sw"] {
		if texts["en"][key] == "" {
			t.Errorf("%q has no English text", key)
		}
	}
	used := regexp.MustCompile(`\.T "([A-Za-z-]+)"`)
	err := fs.WalkDir(assets, "templates", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range used.FindAllStringSubmatch(string(b), -1) {
			if texts["en"][m[1]] == "" {
				t.Errorf("%s asks for text %q, which has none", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"wrongPassword", "locked", "tooManyAttempts", "wrongCode", "passwordsDiffer", "passwordTooShort",
		"passwordTooLong", "passwordWeak", "invitationInvalid", "crossOrigin", "notFound", "signInAgain",
		"unavailable", "serverError", "notYourRole", "filterRefused", "inviteInvalid", "noSuchUser", "lastOwner", "tlCreated", "tlPushSent", "tlPushAnswered", "tlSettled", "tlWebhook",
		"status-pending", "status-success", "status-failed", "refundInvalid", "managedElsewhere", "gatewaysNone", "gatewaysInvalid", "payoutInvalid",
		"changeInvalid", "productionNotApproved", "noWebhookURL", "redeliverSinceInvalid"} {
		if texts["en"][key] == "" {
			t.Errorf("message key %q, used in Go, has no text", key)
		}
	}
}

// TestPagesRender renders every page in both languages with a signed-in owner and checks the
// language, the navigation and that nothing is left unrendered.
func TestPagesRender(t *testing.T) {
	c := &Console{pages: parsePages()}
	p := &principal{token: "ns.token-of-the-test-session-0123456789",
		session:  &paygatev1.ConsoleSession{Spec: paygatev1.ConsoleSessionSpec{User: "user-1"}},
		user:     &paygatev1.ConsoleUser{Spec: paygatev1.ConsoleUserSpec{Email: "owner@duka.example", Role: paygatev1.ConsoleOwner}},
		merchant: &paygatev1.Merchant{Spec: paygatev1.MerchantSpec{DisplayName: "Duka <duka>"}}}
	pay := paygate.Payment{TrxID: "trx-1", MerchantRef: "order-1", Status: "failed", Amount: "1500", Currency: "TZS",
		CreatedAt: "2026-11-27T10:00:00Z", UpdatedAt: "2026-11-27T10:00:05Z"}
	views := map[string]*view{
		"sign-in": {}, "invite": {Email: "a@b.example", InviteUser: "ns/user-1", InviteToken: "t"},
		"second-factor": {p: p}, "enrol": {p: p, TOTPSecret: "ABCD EFGH", TOTPURI: "otpauth://totp/x"},
		"recovery-codes": {p: p, RecoveryCodes: []string{"aaaaa-bbbbb"}},
		"overview":       {p: p, Env: paygatev1.EnvironmentSandbox, Balances: []balanceRow{{Currency: "TZS", Available: "10.00"}}},
		"payments":       {p: p, Env: paygatev1.EnvironmentSandbox, Payments: []paygate.Payment{pay}, Total: 1},
		"payment": {p: p, Env: paygatev1.EnvironmentSandbox, Payment: &pay,
			Timeline: timeline(pay, nil, nil)},
		"audit": {p: p, Audit: []paygatev1.ConsoleAuditRecord{{Spec: paygatev1.ConsoleAuditRecordSpec{Actor: "owner@duka.example",
			Action: "sign-in", Result: paygatev1.ConsoleAuditSuccess, Time: metav1.NewMicroTime(time.Unix(0, 0))}}}},
		"error": {Message: "notFound"},
		"list": {p: p, Env: paygatev1.EnvironmentSandbox, Table: &table{Title: "navPayouts", Path: "/console/payouts",
			Filters: []filter{{Name: "status", Label: "filterStatus", Options: []option{{Value: "failed", Label: "Failed"}}}},
			Columns: []string{"colID", "colAmount"}, Numeric: map[int]bool{1: true}, Rows: [][]cell{{{Text: "po_1"}, {Text: "10.00 TZS"}}}, Total: 1}},
		"settings": {p: p, Settings: &settingsView{Credentials: []credentialRow{{Environment: "sandbox", BusinessID: "b", APIKey: mask("sb_pk_0123456789abcdef"), Issued: true}},
			Gateways: []gatewayRow{{Code: "mpesa", Name: "M-Pesa", Currency: "TZS"}}, WebhookSandbox: "https://hooks.duka.example/x",
			WebhookSecretPendingSince: time.Unix(1, 0), FormKey: "console-k", Overlaps: overlapChoices, ShowRedelivered: true, ErrorKey: "changeInvalid"}},
		"change": {p: p, Change: &changeView{Name: "console-1", Action: "rotate-credentials", Env: "sandbox", Phase: "Applied", Message: "Done.",
			Revealed: &revealedView{BusinessID: "b", APIKey: "test_pk_1", APISecret: "test_sk_1"}}},
		"webhook": deliveryTestView(p),
		"payout": {p: p, Env: paygatev1.EnvironmentSandbox, Payout: &payoutView{Amount: "5000", Currency: "TZS", Currencies: []string{"TZS"},
			Quote: &payoutQuote{Amount: "5000.00", Fee: "550.00", Payable: "4450.00", Currency: "TZS"}, Destination: "+255712345678", Key: "console-k", Error: "x"}},
		"gateways": {p: p, Gateways: &gatewaysView{Choices: []gatewayChoice{{Code: "mpesa", Name: "M-Pesa", Currency: "TZS", Chosen: true}},
			Restricted: true, ManagedBy: "Argo CD <platform>", Saved: true}},
		"people": {p: p, People: []paygatev1.ConsoleUser{{Spec: paygatev1.ConsoleUserSpec{Email: "dev@duka.example", Role: paygatev1.ConsoleDeveloper}}},
			InviteLink: "http://x/console/invite?token=t", Email: "new@duka.example"},
	}
	for name := range c.pages {
		if views[name] == nil {
			t.Errorf("page %s has no test view", name)
		}
	}
	for name, v := range views {
		for _, lang := range []string{"en", "sw"} {
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodGet, "/console/x?lang="+lang, nil)
			c.render(w, r, http.StatusOK, name, v)
			body := w.Body.String()
			if w.Code != http.StatusOK || !strings.Contains(body, `<html lang="`+lang+`">`) {
				t.Errorf("%s in %s: %d %s", name, lang, w.Code, body)
			}
			if strings.Contains(body, "Duka <duka>") {
				t.Errorf("%s: the merchant's name is not escaped", name)
			}
			if v.p != nil && name != "second-factor" && name != "enrol" && !strings.Contains(body, `action="/console/sign-out"`) {
				t.Errorf("%s: no sign-out for a signed-in user", name)
			}
		}
	}
}

// TestTimelineOrder: a payment's timeline is in time order, whatever order its sources gave.
func TestTimelineOrder(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	obj := &paygatev1.Payment{Status: paygatev1.PaymentStatus{Attempts: []paygatev1.PushAttempt{{
		Gateway: "mpesa", Phase: "Failed", Code: "INSUFFICIENT_FUNDS",
		StartedAt: metav1.NewMicroTime(t0.Add(time.Second)), FinishedAt: ptrMicro(t0.Add(3 * time.Second))}}}}
	deliveries := []paygatev1.WebhookDelivery{{Spec: paygatev1.WebhookDeliverySpec{EventType: "payment.failed"},
		Status: paygatev1.WebhookDeliveryStatus{Attempts: []paygatev1.DeliveryAttempt{
			{Number: 2, At: metav1.NewTime(t0.Add(6 * time.Second)), StatusCode: 200},
			{Number: 1, At: metav1.NewTime(t0.Add(5 * time.Second)), StatusCode: 500}}}}}
	rec := paygate.Payment{Status: "failed", CreatedAt: t0.Format(time.RFC3339Nano), UpdatedAt: t0.Add(4 * time.Second).Format(time.RFC3339Nano)}
	var what []string
	for _, e := range timeline(rec, obj, deliveries) {
		what = append(what, e.What+" "+e.Extra)
	}
	want := []string{"tlCreated ", "tlPushSent mpesa", "tlPushAnswered Failed INSUFFICIENT_FUNDS", "tlSettled failed ",
		"tlWebhook payment.failed HTTP 500", "tlWebhook payment.failed HTTP 200"}
	if !slices.Equal(what, want) {
		t.Errorf("timeline = %q, want %q", what, want)
	}
}

func ptrMicro(t time.Time) *metav1.MicroTime { m := metav1.NewMicroTime(t); return &m }

// TestLanguage: ?lang= wins and is remembered, then the cookie, then Accept-Language; English
// otherwise.
func TestLanguage(t *testing.T) {
	for _, tt := range []struct {
		query, cookie, accept, want string
	}{
		{"", "", "", "en"},
		{"", "", "sw-TZ,sw;q=0.9", "sw"},
		{"", "", "fr-FR, en;q=0.5", "en"},
		{"", "sw", "en", "sw"},
		{"lang=en", "sw", "sw", "en"},
		{"lang=xx", "", "", "en"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/console/?"+tt.query, nil)
		if tt.cookie != "" {
			r.AddCookie(&http.Cookie{Name: "paygate-console-lang", Value: tt.cookie})
		}
		r.Header.Set("Accept-Language", tt.accept)
		if got := language(httptest.NewRecorder(), r); got != tt.want {
			t.Errorf("language(%+v) = %s, want %s", tt, got, tt.want)
		}
	}
}

// TestSplitCookie: a session cookie is "<namespace>.<random>"; anything else is no session.
func TestSplitCookie(t *testing.T) {
	for _, tt := range []struct {
		v      string
		ns     string
		wantOK bool
	}{
		{"duka.abcdefghijklmnopqrstuvwxyz", "duka", true},
		{".abcdefghijklmnopqrstuvwxyz", "", false},
		{"duka.short", "", false},
		{"no-dot-at-all-abcdefghijklmnop", "", false},
		{strings.Repeat("n", 64) + ".abcdefghijklmnopqrstuvwxyz", "", false},
		{"Duka.abcdefghijklmnopqrstuvwxyz", "", false},
		{"du/ka.abcdefghijklmnopqrstuvwxyz", "", false},
		{"duka..abcdefghijklmnopqrstuvwxyz", "duka", true},
	} {
		ns, _, ok := splitCookie(tt.v)
		if ok != tt.wantOK || (ok && ns != tt.ns) {
			t.Errorf("splitCookie(%q) = %q, %v", tt.v, ns, ok)
		}
	}
}

// TestMask: a masked key keeps its prefix and last four characters and nothing between.
func TestMask(t *testing.T) {
	for key, want := range map[string]string{
		"sb_pk_0123456789abcdefghij": "sb_pk_0…ghij",
		"short":                      "•••••",
		"":                           "",
	} {
		if got := mask(key); got != want {
			t.Errorf("mask(%q) = %q, want %q", key, got, want)
		}
	}
}
