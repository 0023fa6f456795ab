// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package webhook sends signed webhook deliveries to merchants' receivers (docs/webhooks.md). A
// Sender makes one attempt per Send; scheduling and retries belong to the caller. Every attempt
// goes through an SSRF Guard, never follows redirects, never uses an environment proxy, and
// reports an Outcome whose error text is safe to store in a status: it never contains the
// signing secret, the signature or the receiver's URL.
package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/paygate/paygate/pkg/paygate/signing"
)

// Defaults of Options.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultBrandWord = signing.DefaultBrand
	DefaultUserAgent = "Paygate-Webhooks/1.0"
)

// Limits of a delivery attempt.
const (
	// MaxResponseBytes is how much of a receiver's response body is read (and discarded).
	MaxResponseBytes = 64 << 10
	// MaxErrorLen bounds Outcome.Error, in bytes.
	MaxErrorLen = 256
)

// Options configure a Sender.
type Options struct {
	// Timeout bounds one attempt: connecting, TLS, sending and reading the response head
	// and up to MaxResponseBytes of its body. Default DefaultTimeout.
	Timeout time.Duration
	// Guard refuses internal targets (SSRF). The zero Guard blocks them.
	Guard Guard
	// BrandWord is the word in the header names, X-<BrandWord>-Event and so on. It must be
	// letters, digits and hyphens; anything else falls back to DefaultBrandWord.
	BrandWord string
	// UserAgent is sent as User-Agent. Default DefaultUserAgent.
	UserAgent string
}

// Sender delivers webhook events. It is safe for concurrent use.
type Sender struct {
	client    *http.Client
	timeout   time.Duration
	userAgent string

	hdrEvent, hdrTimestamp, hdrSignature, hdrEventID string
}

// NewSender returns a Sender whose HTTP client dials through opts.Guard, does not follow
// redirects, ignores proxy environment variables, requires TLS 1.2 or later and keeps few idle
// connections per host.
func NewSender(opts Options) *Sender {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if !validBrand(opts.BrandWord) {
		opts.BrandWord = DefaultBrandWord
	}
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	tr := &http.Transport{
		Proxy:                  nil, // never a proxy from the environment: it would bypass the guard
		DialContext:            opts.Guard.DialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    opts.Timeout,
		ResponseHeaderTimeout:  opts.Timeout,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    2,
		MaxConnsPerHost:        16,
		IdleConnTimeout:        60 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		DisableCompression:     true, // the body is discarded anyway
	}
	s := &Sender{
		client: &http.Client{
			Transport: tr,
			Timeout:   opts.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse // a 3xx is a failed attempt, never followed
			},
		},
		timeout:   opts.Timeout,
		userAgent: opts.UserAgent,
	}
	s.hdrEvent, s.hdrTimestamp, s.hdrSignature = signing.WebhookHeaderNames(opts.BrandWord)
	s.hdrEventID = s.hdrEvent + "-Id"
	return s
}

// validBrand reports whether b can stand in a header name.
func validBrand(b string) bool {
	if b == "" || len(b) > 32 {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Delivery is one attempt's input.
type Delivery struct {
	// URL is the receiver, an absolute http or https URL without user info.
	URL string
	// EventID is the event's id (evt_…), sent as X-<Brand>-Event-Id.
	EventID string
	// EventType is sent as X-<Brand>-Event.
	EventType string
	// Environment is sandbox or production, sent as X-Environment.
	Environment string
	// Body is sent, and signed, byte for byte.
	Body []byte
	// Secret is the merchant's webhook signing secret.
	Secret []byte
	// LegacySecret, when set, also signs the body as the older gateway's IPN did: X-Signature,
	// the hex HMAC-SHA256 of the body (signing.SignLegacyIPN). It is never logged or reported.
	LegacySecret []byte
	// Production requires an https URL.
	Production bool
}

// Outcome is the result of one attempt.
type Outcome struct {
	// Delivered is true only when the receiver answered 2xx.
	Delivered bool
	// StatusCode is the receiver's answer, 0 when there was none.
	StatusCode int
	// Error says why the attempt failed: "HTTP 500", "redirect 302 not followed",
	// "timeout after 10s", "connection refused", "blocked: …", "TLS: …", "DNS: …", or a
	// refusal of the URL. It is empty when Delivered. It never contains the secret, the
	// signature or the URL, and is at most MaxErrorLen bytes.
	Error string
	// Duration is how long the attempt took.
	Duration time.Duration
	// Timestamp is the X-<Brand>-Timestamp that was signed and sent (Unix seconds).
	Timestamp string
}

// Send makes one delivery attempt, signed with now's Unix time. It refuses, without sending
// anything, a URL that is not an absolute http(s) URL, that carries user info, or that is not
// https when d.Production, and a delivery without a secret.
func (s *Sender) Send(ctx context.Context, d Delivery, now time.Time) Outcome {
	start := time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	out := Outcome{Timestamp: ts}
	finish := func(msg string) Outcome {
		out.Error = bound(msg)
		out.Duration = time.Since(start)
		return out
	}

	u, msg := checkURL(d.URL, d.Production)
	if msg != "" {
		return finish(msg)
	}
	if len(d.Secret) == 0 {
		return finish("no webhook signing secret; not sent")
	}

	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(d.Body))
	if err != nil {
		return finish("invalid webhook URL; not sent")
	}
	req.Header.Set(s.hdrEvent, d.EventType)
	req.Header.Set(s.hdrTimestamp, ts)
	req.Header.Set(s.hdrSignature, signing.SignWebhook(d.Secret, ts, d.Body))
	if len(d.LegacySecret) > 0 {
		req.Header.Set(signing.LegacyIPNHeader, signing.SignLegacyIPN(d.LegacySecret, d.Body))
	}
	if d.EventID != "" {
		req.Header.Set(s.hdrEventID, d.EventID)
	}
	if d.Environment != "" {
		req.Header.Set("X-Environment", d.Environment)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.userAgent)

	resp, err := s.client.Do(req)
	if err != nil {
		return finish(s.classify(ctx, err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes))
	_ = resp.Body.Close()
	out.StatusCode = resp.StatusCode
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		out.Delivered = true
		return finish("")
	case resp.StatusCode >= 300 && resp.StatusCode <= 399:
		return finish(fmt.Sprintf("redirect %d not followed", resp.StatusCode))
	default:
		return finish(fmt.Sprintf("HTTP %d", resp.StatusCode))
	}
}

// checkURL parses a receiver URL, or says why it is refused.
func checkURL(raw string, production bool) (*url.URL, string) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "webhook URL is not a valid absolute http or https URL; not sent"
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme != "http" && scheme != "https":
		return nil, "webhook URL must be an absolute http or https URL; not sent"
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return nil, "webhook URL must be an absolute http or https URL with a host; not sent"
	case u.User != nil:
		return nil, "webhook URL must not contain user info; not sent"
	case production && scheme != "https":
		return nil, "webhook URL must use https in production; not sent"
	}
	u.Scheme = scheme
	u.Fragment, u.RawFragment = "", ""
	return u, ""
}

// classify turns a client error into a short, safe description. It never includes the URL (the
// *url.Error wrapper is dropped) and never the request headers.
func (s *Sender) classify(ctx context.Context, err error) string {
	if b, ok := asBlocked(err); ok {
		return "blocked: " + b.Error()
	}
	var (
		dnsErr     *net.DNSError
		certErr    *tls.CertificateVerificationError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		recordErr  tls.RecordHeaderError
		alertErr   tls.AlertError
		echErr     *tls.ECHRejectionError
	)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return "timeout after " + s.timeout.String()
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "DNS: no such host " + dnsErr.Name
		}
		return "DNS: lookup of " + dnsErr.Name + " failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable"
	case errors.As(err, &unknownCA):
		return "TLS: certificate signed by an unknown authority"
	case errors.As(err, &hostErr):
		return "TLS: certificate is not valid for " + hostErr.Host
	case errors.As(err, &invalidErr):
		return "TLS: " + invalidErr.Error()
	case errors.As(err, &certErr):
		return "TLS: certificate verification failed"
	case errors.As(err, &recordErr):
		return "TLS: the receiver did not answer with TLS"
	case errors.As(err, &alertErr):
		return "TLS: " + alertErr.Error()
	case errors.As(err, &echErr):
		return "TLS: ECH rejected"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the receiver"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if strings.Contains(msg, "HTTP response to HTTPS client") {
		return "TLS: the receiver answered plain HTTP to https"
	}
	if strings.HasPrefix(msg, "tls: ") {
		return "TLS: " + strings.TrimPrefix(msg, "tls: ")
	}
	return "request failed: " + msg
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// bound makes msg safe to store: printable, valid UTF-8, at most MaxErrorLen bytes.
func bound(msg string) string {
	msg = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return ' '
		}
		return r
	}, msg)
	if len(msg) <= MaxErrorLen {
		return msg
	}
	cut := MaxErrorLen - len("…")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}
