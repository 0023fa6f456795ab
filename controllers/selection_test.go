// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/eligibility"
)

func TestEffectiveSelection(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

	selection := func(name string, created metav1.Time, codes ...paygatev1.GatewayCode) paygatev1.GatewaySelection {
		return paygatev1.GatewaySelection{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shops", Name: name, CreationTimestamp: created},
			Spec: paygatev1.GatewaySelectionSpec{
				MerchantRef: paygatev1.MerchantReference{Name: "acme"},
				Gateways:    codes,
			},
		}
	}
	gateway := func(code string, currency paygatev1.CurrencyCode, active bool) paygatev1.Gateway {
		return paygatev1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Name: code},
			Spec:       paygatev1.GatewaySpec{DisplayName: code, Currency: currency, Type: paygatev1.GatewayTypeAutomatic, Active: &active},
		}
	}
	gateways := []paygatev1.Gateway{
		gateway("mpesa-tz", "TZS", true),
		gateway("tigo-tz", "TZS", true),
		gateway("halo-tz", "TZS", false),
		gateway("mtn-ug", "UGX", true),
	}
	m := &paygatev1.Merchant{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shops", Name: "acme"},
		Spec: paygatev1.MerchantSpec{
			DisplayName: "Acme", Owner: "owner@example.com",
			Currencies: []paygatev1.CurrencyCode{"TZS"},
			Wallets:    []paygatev1.Wallet{{Currency: "TZS"}},
		},
	}
	multiple := func(name string) eligibility.SelectionProblem {
		return eligibility.SelectionProblem{Code: paygatev1.GatewayCode(name), Reason: ReasonMultipleSelections}
	}

	tests := []struct {
		name         string
		selections   []paygatev1.GatewaySelection
		wantSel      eligibility.Selection
		wantProblems []eligibility.SelectionProblem
	}{
		{
			name: "no selections",
		},
		{
			name:       "one valid selection",
			selections: []paygatev1.GatewaySelection{selection("only", at(0), "mpesa-tz", "tigo-tz")},
			wantSel:    eligibility.Selection{"mpesa-tz", "tigo-tz"},
		},
		{
			name:       "one empty selection",
			selections: []paygatev1.GatewaySelection{selection("only", at(0))},
			wantSel:    nil,
		},
		{
			name: "two selections: the older applies, the newer is reported",
			selections: []paygatev1.GatewaySelection{
				selection("a-newer", at(time.Minute), "tigo-tz"),
				selection("z-older", at(0), "mpesa-tz"),
			},
			wantSel:      eligibility.Selection{"mpesa-tz"},
			wantProblems: []eligibility.SelectionProblem{multiple("a-newer")},
		},
		{
			name: "two selections, older listed first",
			selections: []paygatev1.GatewaySelection{
				selection("z-older", at(0), "mpesa-tz"),
				selection("a-newer", at(time.Second), "tigo-tz"),
			},
			wantSel:      eligibility.Selection{"mpesa-tz"},
			wantProblems: []eligibility.SelectionProblem{multiple("a-newer")},
		},
		{
			name: "same creation time: the first by name applies",
			selections: []paygatev1.GatewaySelection{
				selection("beta", at(0), "tigo-tz"),
				selection("alpha", at(0), "mpesa-tz"),
			},
			wantSel:      eligibility.Selection{"mpesa-tz"},
			wantProblems: []eligibility.SelectionProblem{multiple("beta")},
		},
		{
			name: "three selections: the others are reported oldest first",
			selections: []paygatev1.GatewaySelection{
				selection("third", at(2*time.Hour), "tigo-tz"),
				selection("first", at(0), "mpesa-tz"),
				selection("second", at(time.Hour), "tigo-tz"),
			},
			wantSel:      eligibility.Selection{"mpesa-tz"},
			wantProblems: []eligibility.SelectionProblem{multiple("second"), multiple("third")},
		},
		{
			name:       "problems of the selection from CheckSelection",
			selections: []paygatev1.GatewaySelection{selection("only", at(0), "mpesa-tz", "halo-tz", "mtn-ug", "nope")},
			wantSel:    eligibility.Selection{"mpesa-tz", "halo-tz", "mtn-ug", "nope"},
			wantProblems: []eligibility.SelectionProblem{
				{Code: "halo-tz", Reason: eligibility.ProblemGatewayInactive},
				{Code: "mtn-ug", Reason: eligibility.ProblemCurrencyNotEnabled},
				{Code: "nope", Reason: eligibility.ProblemUnknownGateway},
			},
		},
		{
			name: "multiple-selection problems come first, then the applied selection's own",
			selections: []paygatev1.GatewaySelection{
				selection("newer", at(time.Minute), "mpesa-tz"),
				selection("older", at(0), "halo-tz"),
			},
			wantSel: eligibility.Selection{"halo-tz"},
			wantProblems: []eligibility.SelectionProblem{
				multiple("newer"),
				{Code: "halo-tz", Reason: eligibility.ProblemGatewayInactive},
			},
		},
		{
			name: "the ignored selection's gateways are not checked",
			selections: []paygatev1.GatewaySelection{
				selection("older", at(0), "mpesa-tz"),
				selection("newer", at(time.Minute), "nope", "halo-tz"),
			},
			wantSel:      eligibility.Selection{"mpesa-tz"},
			wantProblems: []eligibility.SelectionProblem{multiple("newer")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, problems := effectiveSelection(m, tt.selections, gateways)
			if !slices.Equal(sel, tt.wantSel) {
				t.Errorf("selection = %v, want %v", sel, tt.wantSel)
			}
			if !slices.Equal(problems, tt.wantProblems) {
				t.Errorf("problems = %v, want %v", problems, tt.wantProblems)
			}
			if len(tt.selections) == 0 && (sel != nil || problems != nil) {
				t.Errorf("no selections: got %#v, %#v; want nil, nil", sel, problems)
			}
		})
	}

	t.Run("restricted only when the applied selection names gateways", func(t *testing.T) {
		sel, _ := effectiveSelection(m, []paygatev1.GatewaySelection{
			selection("older", at(0)),
			selection("newer", at(time.Minute), "mpesa-tz"),
		}, gateways)
		if sel.Restricted() {
			t.Errorf("selection %v is restricted; the older, empty selection applies", sel)
		}
	})
}
