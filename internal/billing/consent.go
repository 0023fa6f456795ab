// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package billing

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
)

// ConsentInput is what the API knows when a customer subscribes (docs/billing.md, Consent).
type ConsentInput struct {
	// TermsShown are the terms the merchant showed the customer (terms_shown), kept verbatim.
	TermsShown string
	// RecordedAt is when the API accepted the request.
	RecordedAt time.Time
	// ClientIP is the caller's IP address (internal/clientip).
	ClientIP string
	// UserAgent is the request's User-Agent header, if any.
	UserAgent string
	// Plan is the plan subscribed to, as the API read it: its price goes into the record.
	Plan *paygatev1.BillingPlanSpec
	// BusinessID is the business ID (X-Merchant-Key) the request was signed with. Never a
	// secret: the API key and secret are not part of a consent.
	BusinessID string
	// Environment of the credentials.
	Environment paygatev1.Environment
}

var businessIDPattern = regexp.MustCompile(`^(test|live)_mk_[a-z2-7]{24}$`)

// TermsSHA256 is the lower-case hex SHA-256 of the terms' UTF-8 bytes, exactly as given.
func TermsSHA256(terms string) string {
	sum := sha256.Sum256([]byte(terms))
	return hex.EncodeToString(sum[:])
}

// BuildConsent makes a subscription's consent record: the terms verbatim and their SHA-256, the
// time to the microsecond, the caller's IP address and User-Agent (made valid UTF-8 and cut to
// 512 characters), the plan's price and interval at this moment, and which credentials recorded
// it. Bad terms are a *FieldError for terms_shown; anything else wrong is the caller's bug.
func BuildConsent(in ConsentInput) (paygatev1.SubscriptionConsent, error) {
	if err := CheckTermsShown(in.TermsShown); err != nil {
		return paygatev1.SubscriptionConsent{}, err
	}
	if in.Plan == nil {
		return paygatev1.SubscriptionConsent{}, errors.New("consent: no plan")
	}
	if in.RecordedAt.IsZero() {
		return paygatev1.SubscriptionConsent{}, errors.New("consent: no time")
	}
	ip, err := netip.ParseAddr(in.ClientIP)
	if err != nil {
		return paygatev1.SubscriptionConsent{}, fmt.Errorf("consent: client IP %q is not an IP address", in.ClientIP)
	}
	if !businessIDPattern.MatchString(in.BusinessID) {
		return paygatev1.SubscriptionConsent{}, errors.New("consent: the business ID is not one Paygate issues")
	}
	if in.Environment != paygatev1.EnvironmentSandbox && in.Environment != paygatev1.EnvironmentProduction {
		return paygatev1.SubscriptionConsent{}, fmt.Errorf("consent: unknown environment %q", in.Environment)
	}
	count := in.Plan.IntervalCount
	if count == 0 {
		count = 1 // the CRD's default
	}
	return paygatev1.SubscriptionConsent{
		TermsShown:        in.TermsShown,
		TermsSHA256:       TermsSHA256(in.TermsShown),
		RecordedAt:        metav1.NewMicroTime(in.RecordedAt.UTC().Truncate(time.Microsecond)),
		ClientIP:          ip.Unmap().WithZone("").String(),
		UserAgent:         cleanUserAgent(in.UserAgent),
		PlanAmount:        in.Plan.Amount,
		PlanCurrency:      in.Plan.Currency,
		PlanInterval:      in.Plan.Interval,
		PlanIntervalCount: count,
		RecordedBy:        paygatev1.ConsentRecorder{BusinessID: in.BusinessID, Environment: in.Environment},
	}, nil
}

// cleanUserAgent makes a header value fit the record: invalid UTF-8 and control characters
// become U+FFFD, and it is cut to MaxUserAgentLength characters.
func cleanUserAgent(ua string) string {
	ua = strings.ToValidUTF8(ua, "\uFFFD")
	ua = strings.Map(func(r rune) rune {
		if isControl(r) {
			return '\uFFFD'
		}
		return r
	}, ua)
	if utf8.RuneCountInString(ua) <= MaxUserAgentLength {
		return ua
	}
	return string([]rune(ua)[:MaxUserAgentLength])
}

// VerifyConsent checks a stored consent: its terms are acceptable terms and termsSHA256 is
// their hash. The billing controller refuses to charge a subscription whose consent fails it.
func VerifyConsent(c *paygatev1.SubscriptionConsent) error {
	if err := CheckTermsShown(c.TermsShown); err != nil {
		return fmt.Errorf("consent.termsShown: %w", err)
	}
	if got := TermsSHA256(c.TermsShown); got != c.TermsSHA256 {
		return fmt.Errorf("consent.termsSHA256 is not the SHA-256 of consent.termsShown")
	}
	return nil
}

// ConsentCovers reports whether a consent covers charging a plan's price: same amount, currency,
// interval and interval count. A plan's price is immutable, so this holds unless the plan was
// deleted and made again with another price; the controller then charges nothing.
func ConsentCovers(c *paygatev1.SubscriptionConsent, plan *paygatev1.BillingPlanSpec) bool {
	count := plan.IntervalCount
	if count == 0 {
		count = 1
	}
	consented, err1 := money.ParseAmount(string(c.PlanAmount))
	price, err2 := money.ParseAmount(string(plan.Amount))
	return err1 == nil && err2 == nil && consented.Equal(price) && c.PlanCurrency == plan.Currency &&
		c.PlanInterval == plan.Interval && c.PlanIntervalCount == count
}
