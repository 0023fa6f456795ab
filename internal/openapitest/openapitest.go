// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package openapitest checks HTTP exchanges against an OpenAPI 3 document in tests. Its
// transport validates every request and response that passes through it with kin-openapi and
// reports each mismatch with t.Errorf, so a test suite that talks to the API through it keeps the
// document honest: a response field of the wrong type, a missing required field, an
// undocumented status or header, or a route the document does not describe fails the test.
//
//	c := paygate.New(srv.URL, creds)
//	c.HTTP.Transport = openapitest.NewValidatingTransport(t, openAPIJSON, nil)
//
// NewValidator returns the same transport as a *Validator, whose switches AllowUnknownRoutes and
// StrictRequests change the rules below.
//
// Rules:
//
//   - Every response is validated against the operation the request routes to: status (an
//     undocumented status fails), documented headers (a required one such as Retry-After must be
//     present) and body (content type and schema).
//   - A request is validated (path and query parameters, headers, body) as well. A request the
//     document rejects is reported when the server accepted it (status below 400), since then the
//     document is stricter than the server, or always after StrictRequests. Tests that send
//     invalid requests on purpose to get a 4xx therefore need no opt-out; the 4xx response is
//     still validated.
//   - A request to a path or method the document does not describe fails, so a route cannot be
//     added without documenting it. A test that probes unknown routes on purpose either calls
//     AllowUnknownRoutes (then an undocumented route must be answered 404 or 405 with a body of
//     the document's Error schema) or sends the header X-Test-Skip-OpenAPI: 1, which skips all
//     validation of that exchange and is removed before the request is sent.
//
// Failure messages name the method, the path and the validation error; they never include the
// values of the X-API-Key and X-Signature headers. A Validator is safe for concurrent use.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// SkipHeader on a request turns validation off for that exchange. The transport removes it
// before sending the request.
const SkipHeader = "X-Test-Skip-OpenAPI"

// secretHeaders are never shown in failure messages.
var secretHeaders = []string{"X-API-Key", "X-Signature"}

// TB is the part of testing.TB the validator uses. *testing.T, *testing.B, testing.TB and
// Ginkgo's GinkgoT() all satisfy it. (With GinkgoT, Errorf fails the spec at once by panicking, so
// requests sent from goroutines of a spec need defer GinkgoRecover() there.)
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Validator is an http.RoundTripper that validates every exchange against an OpenAPI document.
type Validator struct {
	t      TB
	doc    *openapi3.T
	router routers.Router
	base   http.RoundTripper

	allowUnknownRoutes atomic.Bool
	strictRequests     atomic.Bool
}

var _ http.RoundTripper = (*Validator)(nil)

// NewValidatingTransport returns a transport that sends requests through base (nil means
// http.DefaultTransport) and validates each request and response against the OpenAPI document
// doc (JSON or YAML), reporting mismatches with t.Errorf. It is NewValidator with the default
// settings; see the package documentation for the rules.
func NewValidatingTransport(t TB, doc []byte, base http.RoundTripper) http.RoundTripper {
	t.Helper()
	return NewValidator(t, doc, base)
}

// NewValidator loads and validates doc and returns a Validator sending through base (nil means
// http.DefaultTransport). An invalid document fails the test at once (t.Fatalf), so call it on
// the test's goroutine.
func NewValidator(t TB, doc []byte, base http.RoundTripper) *Validator {
	t.Helper()
	loader := openapi3.NewLoader()
	d, err := loader.LoadFromData(doc)
	if err != nil {
		t.Fatalf("openapitest: loading the OpenAPI document: %v", err)
	}
	if err := d.Validate(loader.Context); err != nil {
		t.Fatalf("openapitest: the OpenAPI document is invalid: %v", err)
	}
	// Route on paths only: keep each server's base path and drop scheme and host, so requests to
	// any http://127.0.0.1:<port> test server match.
	d.Servers = hostless(d.Servers)
	for _, item := range d.Paths.Map() {
		item.Servers = hostless(item.Servers)
	}
	r, err := gorillamux.NewRouter(d)
	if err != nil {
		t.Fatalf("openapitest: building the router: %v", err)
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &Validator{t: t, doc: d, router: r, base: base}
}

// hostless rewrites servers to their path part ("/" when they have none).
func hostless(servers openapi3.Servers) openapi3.Servers {
	if len(servers) == 0 {
		return servers
	}
	seen := map[string]bool{}
	var out openapi3.Servers
	for _, s := range servers {
		p := "/"
		if u, err := url.Parse(s.URL); err == nil && !strings.Contains(s.URL, "{") && u.Path != "" {
			p = u.Path
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, &openapi3.Server{URL: p})
		}
	}
	return out
}

// AllowUnknownRoutes accepts requests to paths or methods the document does not describe,
// provided the server answers 404 or 405 with a JSON body of the document's Error schema (or
// ErrorResponse/error, whichever exists). Use it in tests that probe unknown routes on purpose.
func (v *Validator) AllowUnknownRoutes() *Validator {
	v.allowUnknownRoutes.Store(true)
	return v
}

// StrictRequests reports every request the document rejects, whatever the server answered.
func (v *Validator) StrictRequests() *Validator {
	v.strictRequests.Store(true)
	return v
}

// RoundTrip sends req through the base transport and validates the exchange.
func (v *Validator) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get(SkipHeader) != "" {
		out := req.Clone(req.Context())
		out.Header.Del(SkipHeader)
		return v.base.RoundTrip(out)
	}

	// Buffer the request body so it can be both sent and validated.
	var reqBody []byte
	out := req
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		reqBody, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("openapitest: reading the request body: %w", err)
		}
		out = req.Clone(req.Context())
		out.Body = io.NopCloser(bytes.NewReader(reqBody))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(reqBody)), nil }
		out.ContentLength = int64(len(reqBody))
	}

	resp, err := v.base.RoundTrip(out)
	if err != nil {
		return resp, err
	}
	respBody, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("openapitest: reading the response body: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))

	if msg := v.validate(req, reqBody, resp, respBody); msg != "" {
		v.t.Errorf("openapitest: %s %s -> %d: %s", req.Method, displayPath(req), resp.StatusCode, redact(msg, req.Header))
	}
	return resp, nil
}

// validate checks one exchange and describes what does not match the document ("" if all does).
func (v *Validator) validate(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) string {
	vreq := validationRequest(req, reqBody)
	route, pathParams, err := v.router.FindRoute(vreq)
	if err != nil {
		return v.unknownRoute(err, resp, respBody)
	}

	opts := &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus: true,
		MultiError:            true,
	}
	opts.WithCustomSchemaErrorFunc(schemaErrorMessage)
	reqInput := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: pathParams, Route: route, Options: opts}
	ctx := context.Background()

	var problems []string
	if err := openapi3filter.ValidateRequest(ctx, reqInput); err != nil &&
		(resp.StatusCode < http.StatusBadRequest || v.strictRequests.Load()) {
		what := "the document rejects a request the server accepted"
		if resp.StatusCode >= http.StatusBadRequest {
			what = "the request does not match the document"
		}
		problems = append(problems, what+": "+errorText(err))
	}
	respInput := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: reqInput,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(respBody)),
		Options:                opts,
	}
	if err := openapi3filter.ValidateResponse(ctx, respInput); err != nil {
		problems = append(problems, "the response does not match the document: "+errorText(err))
	}
	return strings.Join(problems, "; ")
}

// unknownRoute judges an exchange whose route the document does not describe.
func (v *Validator) unknownRoute(routeErr error, resp *http.Response, respBody []byte) string {
	what := "the route is not in the OpenAPI document"
	if errors.Is(routeErr, routers.ErrMethodNotAllowed) {
		what = "the method is not documented for this path"
	}
	if !v.allowUnknownRoutes.Load() {
		return what + " (send header " + SkipHeader + ": 1 or call AllowUnknownRoutes to probe unknown routes on purpose)"
	}
	if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
		return what + ", and the server answered it with a status other than 404 or 405"
	}
	schema := v.errorSchema()
	if schema == nil {
		return ""
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return fmt.Sprintf("%s; its %d response has Content-Type %q, want application/json", what, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var body any
	if err := json.Unmarshal(respBody, &body); err != nil {
		return fmt.Sprintf("%s; its %d response body is not JSON: %v", what, resp.StatusCode, err)
	}
	if err := schema.VisitJSON(body, openapi3.MultiErrors(), openapi3.VisitAsResponse(),
		openapi3.SetSchemaErrorMessageCustomizer(schemaErrorMessage)); err != nil {
		return fmt.Sprintf("%s; its %d response body does not match the Error schema: %s", what, resp.StatusCode, errorText(err))
	}
	return ""
}

// errorSchema is the document's error body schema, if it has one.
func (v *Validator) errorSchema() *openapi3.Schema {
	if v.doc.Components == nil {
		return nil
	}
	for _, name := range []string{"Error", "ErrorResponse", "error"} {
		if ref := v.doc.Components.Schemas[name]; ref != nil && ref.Value != nil {
			return ref.Value
		}
	}
	return nil
}

// validationRequest is a copy of req for the validator: its own body, and a URL with Path set
// even when the client sent an opaque request target.
func validationRequest(req *http.Request, body []byte) *http.Request {
	vreq := req.Clone(context.Background())
	if body != nil {
		vreq.Body = io.NopCloser(bytes.NewReader(body))
		vreq.ContentLength = int64(len(body))
	} else {
		vreq.Body = http.NoBody
		vreq.ContentLength = 0
	}
	vreq.GetBody = nil
	if vreq.URL.Opaque != "" {
		if u, err := url.Parse(req.URL.RequestURI()); err == nil {
			vreq.URL.Path, vreq.URL.RawPath, vreq.URL.Opaque = u.Path, u.RawPath, ""
		}
	}
	vreq.RequestURI = ""
	return vreq
}

// displayPath is the path and query of req as sent.
func displayPath(req *http.Request) string {
	if req.URL.Opaque != "" {
		if u, err := url.Parse(req.URL.RequestURI()); err == nil {
			return u.RequestURI()
		}
	}
	return req.URL.RequestURI()
}

// schemaErrorMessage is a compact schema error: where, why and the offending value.
func schemaErrorMessage(err *openapi3.SchemaError) string {
	where := "/" + strings.Join(err.JSONPointer(), "/")
	value := "absent"
	if b, mErr := json.Marshal(err.Value); mErr == nil {
		value = string(b)
		if len(value) > 120 {
			value = value[:117] + "..."
		}
	}
	msg := fmt.Sprintf("at %s: %s (value %s)", where, err.Reason, value)
	if err.Origin != nil { // the failures inside allOf, anyOf, oneOf
		msg += " [" + errorText(err.Origin) + "]"
	}
	return msg
}

// errorText flattens kin-openapi's (multi) errors into one line.
func errorText(err error) string {
	msg := err.Error()
	msg = strings.ReplaceAll(msg, "\n", " | ")
	return strings.Join(strings.Fields(msg), " ")
}

// redact removes the values of the secret headers from msg.
func redact(msg string, h http.Header) string {
	for _, name := range secretHeaders {
		for _, val := range h.Values(name) {
			if val = strings.TrimSpace(val); val != "" {
				msg = strings.ReplaceAll(msg, val, "[redacted "+name+"]")
			}
		}
	}
	return msg
}
