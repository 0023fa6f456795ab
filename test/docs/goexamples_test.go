// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/pkg/paygate/signing"
	"github.com/paygate/paygate/test/docs/goexample"
	"github.com/paygate/paygate/test/docs/markdown"
	"github.com/paygate/paygate/test/testenv"
)

// exampleDir makes a directory inside the module for example programs, removed after the test.
func exampleDir(t *testing.T) string {
	t.Helper()
	dir, remove, err := goexample.TempDir(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	return dir
}

var (
	resolverOnce sync.Once
	resolver     *goexample.Resolver
	resolverErr  error
)

func goResolver(t *testing.T) *goexample.Resolver {
	t.Helper()
	resolverOnce.Do(func() { resolver, resolverErr = goexample.NewResolver(repoRoot(t)) })
	if resolverErr != nil {
		t.Fatal(resolverErr)
	}
	return resolver
}

// goExamples parses every Go block of README.md and docs/*.md.
func goExamples(t *testing.T) []*goexample.Example {
	t.Helper()
	var out []*goexample.Example
	for _, d := range allDocs(t) {
		for _, b := range d.BlocksOf("go", "golang") {
			e, err := goexample.Parse(b)
			if err != nil {
				t.Error(err)
				continue
			}
			out = append(out, e)
		}
	}
	return out
}

// buildExample writes e (with extra files) into a directory of its own and builds it.
func buildExample(t *testing.T, dir string, e *goexample.Example, extra map[string]string) string {
	t.Helper()
	pkg := filepath.Join(dir, fmt.Sprintf("%s-%d", strings.NewReplacer("/", "-", ".", "-").Replace(e.Block.Doc), e.Block.Line))
	if err := e.Write(pkg, goResolver(t), extra); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "example")
	if err := goexample.Build(repoRoot(t), pkg, bin); err != nil {
		t.Fatalf("%s (a Go %s block) does not build:\n%v", e.Block.Where(), e.Kind, err)
	}
	return bin
}

// TestDocsGoExamplesBuild builds every Go block of the documents with go build and go vet, as
// package goexample makes them into programs. The README's calls also run, against the real
// apiserver, in the end-to-end suite (test/e2e, "the README's Go example").
func TestDocsGoExamplesBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	examples := goExamples(t)
	if len(examples) == 0 {
		t.Fatal("no Go block in README.md and docs/*.md: is the reader broken?")
	}
	dir := exampleDir(t)
	for _, e := range examples {
		t.Run(e.Block.Where(), func(t *testing.T) {
			var extra map[string]string
			if e.Kind == goexample.Declarations && !e.Declares("main") {
				extra = map[string]string{"main.go": "package main\n\nfunc main() {}\n"}
			}
			buildExample(t, dir, e, extra)
		})
	}
}

// signedRequest is one signed request of docs/api.md's worked example.
type signedRequest struct {
	Secret    string `json:"secret"`
	Timestamp string `json:"timestamp"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	Body      string `json:"body"`
	Signature string `json:"-"`
	Where     string `json:"-"`
}

// signDriver runs the documents' Go sign function on the requests read from stdin, one
// signature per line.
const signDriver = `package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	var reqs []struct{ Secret, Timestamp, Method, Path, Body string }
	if err := json.NewDecoder(os.Stdin).Decode(&reqs); err != nil {
		panic(err)
	}
	for _, r := range reqs {
		fmt.Println(sign(r.Secret, r.Timestamp, r.Method, r.Path, []byte(r.Body)))
	}
}
`

// workedExample reads docs/api.md's worked example: the API secret and timestamp of its first
// text block, and every signed payload block with the X-Signature block after it.
func workedExample(t *testing.T, d *markdown.Doc) []signedRequest {
	t.Helper()
	start, end := -1, len(d.Lines)
	for i, l := range d.Lines {
		if strings.HasPrefix(l, "### Worked example") {
			start = i + 1
		} else if start >= 0 && i > start && strings.HasPrefix(l, "#") {
			end = i + 1
			break
		}
	}
	if start < 0 {
		t.Fatalf("%s has no section \"### Worked example\"", d.Path)
	}
	secretRE := regexp.MustCompile(`(?m)^API secret:\s+(\S+)`)
	tsRE := regexp.MustCompile(`(?m)^X-Timestamp:\s+(\d+)`)
	sigRE := regexp.MustCompile(`^X-Signature: (sha256=[0-9a-f]{64})\s*$`)
	payloadRE := regexp.MustCompile(`^(\d+)\.([A-Z]+)\.(/[^.]*)\.(.*)$`)
	var secret, ts string
	var out []signedRequest
	var pending *signedRequest
	for _, b := range d.Blocks() {
		if b.Line < start || b.Line > end || b.Lang != "text" {
			continue
		}
		body := strings.TrimSuffix(b.Body, "\n")
		if m := secretRE.FindStringSubmatch(body); m != nil {
			secret = m[1]
			if m := tsRE.FindStringSubmatch(body); m != nil {
				ts = m[1]
			}
			continue
		}
		if m := payloadRE.FindStringSubmatch(body); m != nil && !strings.Contains(body, "\n") {
			pending = &signedRequest{Secret: secret, Timestamp: m[1], Method: m[2], Path: m[3], Body: m[4], Where: b.Where()}
			if m[1] != ts {
				t.Errorf("%s: the payload's timestamp %s is not the example's X-Timestamp %s", b.Where(), m[1], ts)
			}
			continue
		}
		if m := sigRE.FindStringSubmatch(body); m != nil && pending != nil {
			pending.Signature = m[1]
			out = append(out, *pending)
			pending = nil
		}
	}
	if secret == "" || ts == "" || len(out) == 0 {
		t.Fatalf("%s: the worked example has no API secret, X-Timestamp or signed payload followed by its X-Signature", d.Path)
	}
	return out
}

// webhookVector finds "secret `whsec_…`, timestamp `…` and body `…` give (the signature) `…`".
var webhookVector = regexp.MustCompile("secret `(whsec_[^`]*)`, timestamp `(\\d+)`,? (?:and )?body `([^`]*)` give (?:the signature )?`([0-9a-f]{64})`")

// TestDocsSigningExamples checks the documents' signatures with pkg/paygate/signing, the
// server's and the client's implementation: docs/api.md's worked example (its payloads as
// RequestPayload builds them, its X-Signature values) and every webhook test vector. The Go
// sign function docs/api.md shows runs on the worked example too and must give the same
// signatures.
func TestDocsSigningExamples(t *testing.T) {
	root := repoRoot(t)
	api, err := markdown.Read(root, "docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	reqs := workedExample(t, api)
	for _, r := range reqs {
		payload := string(signing.RequestPayload(r.Timestamp, r.Method, r.Path, []byte(r.Body)))
		want := r.Timestamp + "." + r.Method + "." + r.Path + "." + r.Body
		if payload != want {
			t.Errorf("%s: signing.RequestPayload builds %q, the document shows %q", r.Where, payload, want)
		}
		if got := signing.SignRequest([]byte(r.Secret), r.Timestamp, r.Method, r.Path, []byte(r.Body)); got != r.Signature {
			t.Errorf("%s: pkg/paygate/signing signs it %s, the document shows %s", r.Where, got, r.Signature)
		}
	}

	vectors := 0
	for _, d := range allDocs(t) {
		for _, p := range d.Paragraphs() {
			for _, m := range webhookVector.FindAllStringSubmatch(p.Text, -1) {
				vectors++
				if got := signing.SignWebhook([]byte(m[1]), m[2], []byte(m[3])); got != m[4] {
					t.Errorf("%s:%d: the webhook test vector's signature is %s, not %s", d.Path, p.Line, got, m[4])
				}
			}
		}
	}
	if vectors == 0 {
		t.Error("no webhook test vector (\"secret `whsec_…`, timestamp `…` and body `…` give `…`\") in the documents")
	}

	if testing.Short() {
		return
	}
	var sign *goexample.Example
	for _, b := range api.BlocksOf("go") {
		e, err := goexample.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == goexample.Declarations && e.Declares("sign") {
			sign = e
		}
	}
	if sign == nil {
		t.Fatalf("%s has no Go block declaring func sign", api.Path)
	}
	bin := buildExample(t, exampleDir(t), sign, map[string]string{"driver.go": signDriver})
	in, err := json.Marshal(reqs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running %s's sign: %v", sign.Block.Where(), err)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i, r := range reqs {
		if i >= len(got) || got[i] != r.Signature {
			t.Errorf("%s: the document's sign (%s) gives %q, the document shows %s", r.Where, sign.Block.Where(), at(got, i), r.Signature)
		}
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}

// TestDocsWebhookReceiverExample builds the complete receiver of docs/webhooks-receiver.md, runs
// it, and sends it the document's own example payloads, signed as Paygate signs them: each
// event is processed once however often it arrives (a duplicate is answered 200 again), a
// completed payment is fulfilled and a failed one is not, a bad signature is answered 401 and
// a GET 405.
func TestDocsWebhookReceiverExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program")
	}
	root := repoRoot(t)
	d, err := markdown.Read(root, "docs/webhooks-receiver.md")
	if err != nil {
		t.Fatal(err)
	}
	var receiver *goexample.Example
	for _, b := range d.BlocksOf("go") {
		e, err := goexample.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == goexample.Program && e.Uses("paygate", "WebhookVerifier") {
			receiver = e
		}
	}
	if receiver == nil {
		t.Fatalf("%s has no Go program using paygate.WebhookVerifier", d.Path)
	}
	// The document's example payloads, by event type.
	payloads := map[string][]byte{}
	for _, b := range d.BlocksOf("json") {
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(b.Body)); err != nil {
			t.Errorf("%s: not JSON: %v", b.Where(), err)
			continue
		}
		var env struct{ Type string }
		if json.Unmarshal(compact.Bytes(), &env) == nil && env.Type != "" {
			payloads[env.Type] = compact.Bytes()
		}
	}
	for _, typ := range []string{"payment.completed", "payment.failed"} {
		if payloads[typ] == nil {
			t.Fatalf("%s shows no %s payload", d.Path, typ)
		}
	}

	bin := buildExample(t, exampleDir(t), receiver, nil)
	port := freePort(t)
	secret := "whsec_docs_receiver_example"
	var logs syncBuffer
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PAYGATE_WEBHOOK_SECRET="+secret, "PORT="+strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d/hooks/paygate", port)
	waitListening(t, port, &logs)

	send := func(typ string, body []byte, sig string) int {
		t.Helper()
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		if sig == "" {
			sig = signing.SignWebhook([]byte(secret), ts, body)
		}
		event, tsHeader, sigHeader := signing.WebhookHeaderNames("")
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(event, typ)
		req.Header.Set(tsHeader, ts)
		req.Header.Set(sigHeader, sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v (the receiver's output: %s)", url, err, logs.String())
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	field := func(body []byte, path ...string) string {
		var v any
		_ = json.Unmarshal(body, &v)
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		s, _ := v.(string)
		return s
	}

	completed, failed := payloads["payment.completed"], payloads["payment.failed"]
	for i := 0; i < 2; i++ {
		if code := send("payment.completed", completed, ""); code != http.StatusOK {
			t.Fatalf("the receiver answered %d to %s's payment.completed (attempt %d), want 200; output:\n%s", code, d.Path, i+1, logs.String())
		}
	}
	if code := send("payment.failed", failed, ""); code != http.StatusOK {
		t.Fatalf("the receiver answered %d to %s's payment.failed, want 200; output:\n%s", code, d.Path, logs.String())
	}
	if code := send("payment.completed", completed, strings.Repeat("0", 64)); code != http.StatusUnauthorized {
		t.Errorf("the receiver answered %d to a bad signature, want 401", code)
	}
	if resp, err := http.Get(url); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET answered %v %v, want 405", resp, err)
	}

	fulfil := "fulfil " + field(completed, "data", "merchant_ref")
	notPaid := "order " + field(failed, "data", "merchant_ref") + " not paid: " + field(failed, "data", "reason")
	deadline := time.Now().Add(30 * time.Second)
	for !(strings.Contains(logs.String(), fulfil) && strings.Contains(logs.String(), notPaid)) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	out := logs.String()
	if n := strings.Count(out, fulfil); n != 1 {
		t.Errorf("the receiver logged %q %d times for one event sent twice, want once; output:\n%s", fulfil, n, out)
	}
	if !strings.Contains(out, notPaid) {
		t.Errorf("the receiver did not log %q; output:\n%s", notPaid, out)
	}
}

// freePort finds a loopback port nobody listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitListening waits until something accepts connections on the loopback port.
func waitListening(t *testing.T, port int, logs *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver does not listen on port %d: %v; output:\n%s", port, err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type syncBuffer = testenv.SyncBuffer
