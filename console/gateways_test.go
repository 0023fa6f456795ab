// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
)

func consoleGateway(code string, currency paygatev1.CurrencyCode, mods ...func(*paygatev1.Gateway)) *paygatev1.Gateway {
	g := &paygatev1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: code},
		Spec: paygatev1.GatewaySpec{DisplayName: strings.ToUpper(code), Currency: currency, Type: paygatev1.GatewayTypeAutomatic}}
	for _, mod := range mods {
		mod(g)
	}
	return g
}

// TestChooseGateways: an owner's choice becomes the merchant's GatewaySelection (created, then
// updated in place, never a second one), and an audit record; a choice of a gateway the merchant
// cannot use, an empty choice, or any choice while the configuration is managed elsewhere is
// refused with nothing written.
func TestChooseGateways(t *testing.T) {
	inactive := false
	for _, tc := range []struct {
		name       string
		managedBy  string
		existing   []paygatev1.GatewayCode // a selection made with kubectl before; nil: none
		form       []string
		wantStatus int
		want       []paygatev1.GatewayCode // the selection after; nil: none
		wantAudit  paygatev1.ConsoleAuditResult
	}{
		{name: "a first choice creates the selection", form: []string{"tigo-tz"}, wantStatus: http.StatusSeeOther,
			want: []paygatev1.GatewayCode{"tigo-tz"}, wantAudit: paygatev1.ConsoleAuditSuccess},
		{name: "a choice updates the selection made with kubectl", existing: []paygatev1.GatewayCode{"mpesa-tz"},
			form: []string{"tigo-tz", "mpesa-tz", "tigo-tz"}, wantStatus: http.StatusSeeOther,
			want: []paygatev1.GatewayCode{"tigo-tz", "mpesa-tz"}, wantAudit: paygatev1.ConsoleAuditSuccess},
		{name: "a gateway of another currency", form: []string{"tigo-tz", "mpesa-ke"}, wantStatus: http.StatusUnprocessableEntity,
			wantAudit: paygatev1.ConsoleAuditRefused},
		{name: "an inactive gateway", form: []string{"airtel-tz"}, wantStatus: http.StatusUnprocessableEntity, wantAudit: paygatev1.ConsoleAuditRefused},
		{name: "an unknown gateway", existing: []paygatev1.GatewayCode{"mpesa-tz"}, form: []string{"nothing"},
			wantStatus: http.StatusUnprocessableEntity, want: []paygatev1.GatewayCode{"mpesa-tz"}, wantAudit: paygatev1.ConsoleAuditRefused},
		{name: "nothing ticked", existing: []paygatev1.GatewayCode{"mpesa-tz"}, wantStatus: http.StatusUnprocessableEntity,
			want: []paygatev1.GatewayCode{"mpesa-tz"}},
		{name: "managed elsewhere", managedBy: "Argo CD", form: []string{"tigo-tz"}, wantStatus: http.StatusConflict,
			wantAudit: paygatev1.ConsoleAuditRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := merchant("shop-ns", "shop")
			m.Spec.Currencies = []paygatev1.CurrencyCode{"TZS"}
			if tc.managedBy != "" {
				m.Annotations = map[string]string{paygatev1.AnnotationManagedBy: tc.managedBy}
			}
			objs := []client.Object{m, consoleGateway("mpesa-tz", "TZS"), consoleGateway("tigo-tz", "TZS"), consoleGateway("mpesa-ke", "KES"),
				consoleGateway("airtel-tz", "TZS", func(g *paygatev1.Gateway) { g.Spec.Active = &inactive })}
			if tc.existing != nil {
				objs = append(objs, &paygatev1.GatewaySelection{ObjectMeta: metav1.ObjectMeta{Namespace: "shop-ns", Name: "chosen-by-kubectl"},
					Spec: paygatev1.GatewaySelectionSpec{MerchantRef: paygatev1.MerchantReference{Name: "shop"}, Gateways: tc.existing}})
			}
			cl := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(objs...).Build()
			c := New(Options{Cache: cl, APIReader: cl, Writer: cl, PublicURL: "http://console.test"})
			owner := consoleUser("shop-ns", "shop", "owner@shop.example", paygatev1.ConsoleOwner, false)
			p := &principal{token: "shop-ns.token", session: &paygatev1.ConsoleSession{}, user: owner, merchant: m}
			r := httptest.NewRequest(http.MethodPost, "http://console.test"+Prefix+"/gateways",
				strings.NewReader(url.Values{"gateway": tc.form}.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
			w := httptest.NewRecorder()
			c.chooseGateways(w, r)
			if w.Code != tc.wantStatus {
				t.Fatalf("answered %d, want %d: %s", w.Code, tc.wantStatus, w.Body)
			}

			var sels paygatev1.GatewaySelectionList
			if err := cl.List(context.Background(), &sels, client.InNamespace("shop-ns")); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == nil && len(sels.Items) != 0:
				t.Errorf("a selection was written: %+v", sels.Items)
			case tc.want != nil && (len(sels.Items) != 1 || !slices.Equal(sels.Items[0].Spec.Gateways, tc.want)):
				t.Errorf("selections %+v, want one with %v", sels.Items, tc.want)
			case tc.want != nil && tc.existing != nil && sels.Items[0].Name != "chosen-by-kubectl":
				t.Errorf("a second selection instead of the existing one: %s", sels.Items[0].Name)
			}
			var audit paygatev1.ConsoleAuditRecordList
			if err := cl.List(context.Background(), &audit, client.InNamespace("shop-ns")); err != nil {
				t.Fatal(err)
			}
			if tc.wantAudit == "" {
				if len(audit.Items) != 0 {
					t.Errorf("audit records %+v, want none", audit.Items)
				}
				return
			}
			if len(audit.Items) != 1 || audit.Items[0].Spec.Result != tc.wantAudit || audit.Items[0].Spec.Action != "choose-gateways" {
				t.Errorf("audit records %+v, want one choose-gateways %s", audit.Items, tc.wantAudit)
			}
		})
	}
}
