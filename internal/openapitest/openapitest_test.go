// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package openapitest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// testDoc describes a tiny API. Its server has a host and a base path, which the validator must
// ignore and keep respectively.
const testDoc = `{
  "openapi": "3.0.3",
  "info": {"title": "test", "version": "1"},
  "servers": [{"url": "https://api.example.com/v1"}],
  "components": {
    "securitySchemes": {"apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}},
    "schemas": {
      "Error": {"type": "object", "required": ["error", "message"], "additionalProperties": false,
        "properties": {"error": {"type": "string"}, "message": {"type": "string"},
          "errors": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}}}},
      "Thing": {"type": "object", "required": ["id", "count"], "additionalProperties": false,
        "properties": {"id": {"type": "string"}, "count": {"type": "integer"}, "note": {"type": "string", "nullable": true}}}
    },
    "responses": {
      "Error": {"description": "error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    }
  },
  "security": [{"apiKey": []}],
  "paths": {
    "/things": {
      "post": {
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["name"],
          "properties": {"name": {"type": "string", "maxLength": 10}}}}}},
        "responses": {
          "201": {"description": "created", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
          "422": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/things/{id}": {
      "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
      "get": {
        "parameters": [{"name": "verbose", "in": "query", "schema": {"type": "boolean"}}],
        "responses": {
          "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
          "404": {"$ref": "#/components/responses/Error"},
          "429": {"description": "slow down",
            "headers": {"Retry-After": {"required": true, "schema": {"type": "integer", "minimum": 1}}},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        }
      }
    }
  }
}`

// recorder is a testing.TB that collects Errorf calls instead of failing.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Helper() {}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = nil
}

func (r *recorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

// reply is a canned response.
type reply struct {
	status int
	body   string
	header map[string]string
}

// setup starts a server answering with handle and returns a client whose transport is a
// Validator reporting to the returned recorder.
func setup(t *testing.T, handle func(r *http.Request, body []byte) reply) (*http.Client, string, *Validator, *recorder) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rep := handle(r, body)
		w.Header().Set("Content-Type", "application/json")
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(rep.status)
		_, _ = io.WriteString(w, rep.body)
	}))
	t.Cleanup(srv.Close)
	rec := &recorder{TB: t}
	v := NewValidator(rec, []byte(testDoc), nil)
	return &http.Client{Transport: v}, srv.URL + "/v1", v, rec
}

func do(t *testing.T, c *http.Client, method, url, body string, header map[string]string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func expectNoErrors(t *testing.T, rec *recorder) {
	t.Helper()
	for _, e := range rec.errors() {
		t.Errorf("unexpected validation failure: %s", e)
	}
}

func expectError(t *testing.T, rec *recorder, parts ...string) {
	t.Helper()
	errs := rec.errors()
	if len(errs) != 1 {
		t.Fatalf("got %d validation failures, want 1: %q", len(errs), errs)
	}
	for _, p := range parts {
		if !strings.Contains(errs[0], p) {
			t.Errorf("validation failure %q does not mention %q", errs[0], p)
		}
	}
}

func TestValidExchangesPass(t *testing.T) {
	var gotBody []byte
	c, base, _, rec := setup(t, func(r *http.Request, body []byte) reply {
		switch {
		case r.Method == http.MethodPost:
			gotBody = body
			return reply{status: 201, body: `{"id":"7","count":0,"note":null}`}
		case r.URL.Path == "/v1/things/missing":
			return reply{status: 404, body: `{"error":"NOT_FOUND","message":"no such thing"}`}
		case r.URL.Path == "/v1/things/busy":
			return reply{status: 429, body: `{"error":"RATE_LIMIT_EXCEEDED","message":"slow down"}`, header: map[string]string{"Retry-After": "3"}}
		default:
			return reply{status: 200, body: `{"id":"1","count":2}`}
		}
	})
	status, body := do(t, c, "POST", base+"/things", `{"name":"box","extra":true}`, nil)
	if status != 201 || body != `{"id":"7","count":0,"note":null}` {
		t.Errorf("POST: got %d %s", status, body)
	}
	if string(gotBody) != `{"name":"box","extra":true}` {
		t.Errorf("the server received body %q", gotBody)
	}
	if status, body := do(t, c, "GET", base+"/things/1?verbose=true", "", nil); status != 200 || body != `{"id":"1","count":2}` {
		t.Errorf("GET: got %d %s", status, body)
	}
	do(t, c, "GET", base+"/things/missing", "", nil)
	do(t, c, "GET", base+"/things/busy", "", nil)
	expectNoErrors(t, rec)
}

func TestWrongTypeFails(t *testing.T) {
	c, base, _, rec := setup(t, func(*http.Request, []byte) reply {
		return reply{status: 200, body: `{"id":"1","count":"2"}`}
	})
	status, body := do(t, c, "GET", base+"/things/1", "", nil)
	if status != 200 || body != `{"id":"1","count":"2"}` {
		t.Errorf("the transport changed the response: %d %s", status, body)
	}
	expectError(t, rec, "GET /v1/things/1 -> 200", "response does not match", "/count")
}

func TestMissingRequiredFieldFails(t *testing.T) {
	c, base, _, rec := setup(t, func(*http.Request, []byte) reply {
		return reply{status: 200, body: `{"id":"1"}`}
	})
	do(t, c, "GET", base+"/things/1", "", nil)
	expectError(t, rec, "response does not match", "count")
}

func TestUnknownResponseFieldFails(t *testing.T) {
	c, base, _, rec := setup(t, func(*http.Request, []byte) reply {
		return reply{status: 200, body: `{"id":"1","count":1,"surprise":true}`}
	})
	do(t, c, "GET", base+"/things/1", "", nil)
	expectError(t, rec, "surprise")
}

func TestUndocumentedStatusFails(t *testing.T) {
	c, base, _, rec := setup(t, func(*http.Request, []byte) reply {
		return reply{status: http.StatusTeapot, body: `{"error":"TEAPOT","message":"short and stout"}`}
	})
	do(t, c, "GET", base+"/things/1", "", nil)
	expectError(t, rec, "-> 418", "status is not supported")
}

func TestMissingRequiredResponseHeaderFails(t *testing.T) {
	c, base, _, rec := setup(t, func(*http.Request, []byte) reply {
		return reply{status: 429, body: `{"error":"RATE_LIMIT_EXCEEDED","message":"slow down"}`}
	})
	do(t, c, "GET", base+"/things/1", "", nil)
	expectError(t, rec, "Retry-After")
}

func TestErrorBodyShapeIsChecked(t *testing.T) {
	c, base, _, rec := setup(t, func(*http.Request, []byte) reply {
		return reply{status: 404, body: `{"error":"NOT_FOUND","message":"gone","errors":{"id":"not a list"}}`}
	})
	do(t, c, "GET", base+"/things/1", "", nil)
	expectError(t, rec, "/errors/id")
}

func TestUndocumentedRouteFails(t *testing.T) {
	c, base, _, rec := setup(t, func(*http.Request, []byte) reply {
		return reply{status: 200, body: `{"ok":true}`}
	})
	do(t, c, "GET", base+"/secret-new-route", "", nil)
	expectError(t, rec, "GET /v1/secret-new-route", "not in the OpenAPI document")

	rec.reset()
	do(t, c, "DELETE", base+"/things/1", "", nil)
	expectError(t, rec, "DELETE /v1/things/1", "method is not documented")
}

func TestSkipHeaderSkipsAndIsStripped(t *testing.T) {
	var sawHeader bool
	c, base, _, rec := setup(t, func(r *http.Request, _ []byte) reply {
		sawHeader = r.Header.Get(SkipHeader) != ""
		return reply{status: 200, body: `{"anything":1}`}
	})
	do(t, c, "GET", base+"/not-documented", "", map[string]string{SkipHeader: "1"})
	if sawHeader {
		t.Errorf("the server received %s", SkipHeader)
	}
	expectNoErrors(t, rec)
}

func TestAllowUnknownRoutes(t *testing.T) {
	var status int
	var body string
	c, base, v, rec := setup(t, func(*http.Request, []byte) reply { return reply{status: status, body: body} })
	v.AllowUnknownRoutes()

	status, body = 404, `{"error":"NOT_FOUND","message":"No route matches."}`
	do(t, c, "GET", base+"/nope", "", nil)
	status, body = 405, `{"error":"METHOD_NOT_ALLOWED","message":"No."}`
	do(t, c, "PATCH", base+"/things/1", `{}`, nil)
	expectNoErrors(t, rec)

	status, body = 200, `{"ok":true}`
	do(t, c, "GET", base+"/nope", "", nil)
	expectError(t, rec, "other than 404 or 405")

	rec.reset()
	status, body = 404, `{"message":"no label"}`
	do(t, c, "GET", base+"/nope", "", nil)
	expectError(t, rec, "Error schema", "error")
}

func TestInvalidRequests(t *testing.T) {
	var status int
	var body string
	c, base, v, rec := setup(t, func(*http.Request, []byte) reply { return reply{status: status, body: body} })

	// The server accepts what the document rejects: the document is wrong.
	status, body = 201, `{"id":"1","count":1}`
	do(t, c, "POST", base+"/things", `{"name":5}`, nil)
	expectError(t, rec, "rejects a request the server accepted", "/name")

	// A deliberately invalid request that the server rejects is fine; the 422 is still checked.
	rec.reset()
	status, body = 422, `{"error":"Validation failed","message":"name must be a string","errors":{"name":["must be a string"]}}`
	do(t, c, "POST", base+"/things", `{"name":5}`, nil)
	do(t, c, "GET", base+"/things/1?verbose=maybe", "", nil) // 422 is not documented there
	expectError(t, rec, "GET /v1/things/1?verbose=maybe -> 422", "status is not supported")

	// StrictRequests reports it anyway.
	rec.reset()
	v.StrictRequests()
	do(t, c, "POST", base+"/things", `{"name":"far too long a name"}`, nil)
	expectError(t, rec, "request does not match", "/name")
}

func TestSecretsAreNotReported(t *testing.T) {
	const apiKey, signature = "sk_test_9a8b7c6d5e", "sha256=0123456789abcdef"
	c, base, _, rec := setup(t, func(r *http.Request, _ []byte) reply {
		// A broken server echoing credentials into a badly typed field.
		return reply{status: 200, body: fmt.Sprintf(`{"id":1,"count":"%s %s"}`, r.Header.Get("X-API-Key"), r.Header.Get("X-Signature"))}
	})
	do(t, c, "GET", base+"/things/1", "", map[string]string{"X-API-Key": apiKey, "X-Signature": signature})
	errs := rec.errors()
	if len(errs) != 1 {
		t.Fatalf("got %d validation failures, want 1: %q", len(errs), errs)
	}
	if strings.Contains(errs[0], apiKey) || strings.Contains(errs[0], signature) {
		t.Errorf("the failure shows a secret header value: %s", errs[0])
	}
	if !strings.Contains(errs[0], "[redacted X-API-Key]") {
		t.Errorf("the failure does not mark the redaction: %s", errs[0])
	}
}

func TestOpaqueRequestTarget(t *testing.T) {
	c, base, _, rec := setup(t, func(r *http.Request, _ []byte) reply {
		// Go sends an opaque //host/path target in absolute form: http://host/path.
		if r.URL.EscapedPath() != "/v1/things/a%2Fb" {
			return reply{status: 404, body: `{"error":"NOT_FOUND","message":"` + r.URL.EscapedPath() + `"}`}
		}
		return reply{status: 200, body: `{"id":"a/b","count":1}`}
	})
	req, err := http.NewRequest("GET", base+"/things/a%2Fb", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = "//" + req.URL.Host + "/v1/things/a%2Fb" // as pkg/paygate sends it
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Errorf("status %d: %s", resp.StatusCode, b)
	}
	expectNoErrors(t, rec)
}

func TestConcurrentUse(t *testing.T) {
	c, base, _, rec := setup(t, func(r *http.Request, body []byte) reply {
		if r.Method == http.MethodPost {
			if !bytes.Contains(body, []byte(`"name"`)) {
				return reply{status: 422, body: `{"error":"Validation failed","message":"lost body"}`}
			}
			return reply{status: 201, body: `{"id":"n","count":1}`}
		}
		if strings.HasSuffix(r.URL.Path, "/bad") {
			return reply{status: 200, body: `{"id":"bad"}`}
		}
		return reply{status: 200, body: `{"id":"x","count":3}`}
	})
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch i % 5 {
			case 0:
				do(t, c, "POST", base+"/things", fmt.Sprintf(`{"name":"n%d"}`, i), nil)
			case 4:
				do(t, c, "GET", base+"/things/bad", "", nil)
			default:
				do(t, c, "GET", base+fmt.Sprintf("/things/%d", i), "", nil)
			}
		}()
	}
	wg.Wait()
	errs := rec.errors()
	if len(errs) != 10 {
		t.Fatalf("got %d validation failures, want 10 (the /things/bad responses): %q", len(errs), errs)
	}
	for _, e := range errs {
		if !strings.Contains(e, "GET /v1/things/bad") {
			t.Errorf("unexpected failure: %s", e)
		}
	}
}

func TestNewValidatingTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"1","count":2}`)
	}))
	defer srv.Close()
	c := &http.Client{Transport: NewValidatingTransport(t, []byte(testDoc), http.DefaultTransport)}
	resp, err := c.Get(srv.URL + "/v1/things/1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}
