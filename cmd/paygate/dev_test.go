// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build dev

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/test/testenv"
)

// devChildArgs, when set (JSON), makes TestDevCommandProcess run `paygate dev` with these
// arguments: TestDevCommand runs the command in a process of its own, as `make run` does, because
// a process holds one manager (controller names are unique) and the command owns its signals.
const devChildArgs = "PAYGATE_DEV_TEST_ARGS"

// TestDevCommandProcess is `paygate dev` inside TestDevCommand's child process.
func TestDevCommandProcess(t *testing.T) {
	raw := os.Getenv(devChildArgs)
	if raw == "" {
		t.Skip("the paygate dev process of TestDevCommand")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(runDev(args))
}

// TestDevCommand runs `paygate dev` as `make run` does (a state directory of its own, the API on a
// free port) and checks what a developer sees: the demo merchants are Ready; the pawaPay (TZS) and
// Daraja (KES) demo gateways are ProviderReady against the fakes the command runs; sandbox payments
// through each reach their outcome at the fake (success, and a scripted failure), while a TZS payment
// without allow_payment_methods still goes through the simulator's mpesa-tz; the welcome text says
// where the fakes listen; and Ctrl-C stops everything with exit status 0.
func TestDevCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, kube-apiserver and kube-controller-manager")
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	stateDir := t.TempDir()
	args, _ := json.Marshal([]string{"--assets", assets, "--state-dir", stateDir, "--bind-address", addr})

	out, err := os.Create(filepath.Join(stateDir, "dev.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDevCommandProcess$", "-test.timeout=0")
	cmd.Env = append(os.Environ(), devChildArgs+"="+string(args))
	cmd.Stdout, cmd.Stderr = out, out
	// A process group of its own, so that a failed test can stop the control plane it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			logDevOutput(t, out.Name())
		}
	}()

	// The welcome text ends with "Press Ctrl-C": everything is up by then.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		b, _ := os.ReadFile(out.Name())
		if strings.Contains(string(b), "Press Ctrl-C to stop everything.") {
			break
		}
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("paygate dev exited before it was up: %v", err)
		case <-time.After(500 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("paygate dev was not up within 5 minutes")
		}
	}
	welcome, _ := os.ReadFile(out.Name())
	for _, want := range []string{
		devPawapayGateway + "  TZS  pawaPay Merchant API v2 fake at http://127.0.0.1:",
		devDarajaGateway + "   KES  M-Pesa Daraja fake at http://127.0.0.1:",
		"http://" + addr + devPawapayCallbackPath, "http://" + addr + devDarajaCallbackPath,
		`"allow_payment_methods":["pawapay"]`, `"allow_payment_methods":["daraja"]`,
	} {
		if !strings.Contains(string(welcome), want) {
			t.Errorf("the welcome text lacks %q", want)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(stateDir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	states, err := waitForProviderGateways(ctx, c, time.Minute, devPawapayGateway, devDarajaGateway)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range states {
		if !s.Ready {
			t.Errorf("gateway %s is not ProviderReady: %s", s.Name, s.Message)
		}
	}
	var sel paygatev1.GatewaySelection
	if err := c.Get(ctx, client.ObjectKey{Namespace: devNamespace, Name: devProviderMerchant}, &sel); err != nil {
		t.Fatal(err)
	}
	if got := sel.Spec.Gateways; len(got) < 2 || got[0] != "mpesa-tz" || got[len(got)-2] != devPawapayGateway || got[len(got)-1] != devDarajaGateway {
		t.Errorf("duka-online's gateway selection is %v: want the sample's gateways, then %s and %s", got, devPawapayGateway, devDarajaGateway)
	}

	env := readCredentials(t, filepath.Join(stateDir, "credentials.env"))
	checkDevConsole(t, env)
	api := paygate.New(env["PAYGATE_BASE_URL"], paygate.Credentials{Environment: env["PAYGATE_ENVIRONMENT"],
		MerchantKey: env["PAYGATE_MERCHANT_KEY"], APIKey: env["PAYGATE_API_KEY"], APISecret: env["PAYGATE_API_SECRET"]})
	var throughFakes []string // trx ids of the payments settled at a fake
	for _, tc := range []struct {
		name, amount, currency, phone, method string
		gateway, status, reason               string
	}{
		{"through pawaPay", "2000", "TZS", "+255754000601", "pawapay", devPawapayGateway, "success", ""},
		{"declined at pawaPay", "2000", "TZS", "+255754000001", "pawapay", devPawapayGateway, "failed", "INSUFFICIENT_FUNDS"},
		{"through Daraja", "150", "KES", "+254708374149", "daraja", devDarajaGateway, "success", ""},
		{"cancelled at M-Pesa", "150", "KES", "+254708000003", "daraja", devDarajaGateway, "failed", "CUSTOMER_CANCELLED"},
		{"default TZS gateway", "1500", "TZS", "0712345678", "", "mpesa-tz", "success", ""},
	} {
		req := paygate.CreatePaymentRequest{PaymentAmount: json.Number(tc.amount), CurrencyCode: tc.currency,
			RefTrx: "dev-" + strings.ReplaceAll(tc.name, " ", "-"), PaymentMode: "push", CustomerPhone: tc.phone}
		if tc.method != "" {
			req.AllowPaymentMethods = []string{tc.method}
		}
		created, err := api.CreatePayment(ctx, req, "")
		if err != nil {
			t.Errorf("%s: creating the payment: %v", tc.name, err)
			continue
		}
		var p *paygate.Payment
		for p == nil || p.Status == "pending" {
			if p, err = api.GetPayment(ctx, created.TrxID); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if p.Status == "pending" {
				select {
				case <-ctx.Done():
					t.Fatalf("%s: still pending: %+v", tc.name, p)
				case <-time.After(250 * time.Millisecond):
				}
			}
		}
		if p.Status != tc.status || p.Reason != tc.reason || p.Gateway != tc.gateway || p.Remark != "SANDBOX_TRANSACTION" {
			t.Errorf("%s: status %s, reason %q, gateway %s, remark %s; want %s, %q through %s, SANDBOX_TRANSACTION",
				tc.name, p.Status, p.Reason, p.Gateway, p.Remark, tc.status, tc.reason, tc.gateway)
		}
		if tc.method != "" {
			throughFakes = append(throughFakes, created.TrxID)
		}
	}

	// Each fake called the apiserver back about each of its payments, at the URLs configured.
	for _, trxID := range throughFakes {
		deadline := time.Now().Add(30 * time.Second)
		for !apiserverLoggedCallback(out.Name(), trxID) {
			if time.Now().After(deadline) {
				t.Errorf("the apiserver logged no provider callback about %s", trxID)
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
	}

	// Approving the pending merchant gives it production keys: credentials.env gets them while
	// paygate dev runs, and the terminal says so.
	var kahawa paygatev1.Merchant
	if err := c.Get(ctx, client.ObjectKey{Namespace: devNamespace, Name: "kahawa-cafe"}, &kahawa); err != nil {
		t.Fatal(err)
	}
	if kahawa.Spec.BusinessStatus == paygatev1.BusinessApproved {
		t.Fatal("kahawa-cafe is approved already: the demo's pending merchant")
	}
	patch := client.MergeFrom(kahawa.DeepCopy())
	kahawa.Spec.BusinessStatus = paygatev1.BusinessApproved
	if err := c.Patch(ctx, &kahawa, patch); err != nil {
		t.Fatal(err)
	}
	for {
		b, _ := os.ReadFile(filepath.Join(stateDir, "credentials.env"))
		printed, _ := os.ReadFile(out.Name())
		if strings.Contains(string(b), "export KAHAWA_CAFE_PRODUCTION_API_KEY=live_") &&
			strings.Contains(string(printed), "Credentials changed (KAHAWA_CAFE_PRODUCTION_* added)") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("credentials.env did not get kahawa-cafe's production keys:\n%s", b)
		case <-time.After(250 * time.Millisecond):
		}
	}

	// Ctrl-C.
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				t.Errorf("paygate dev exited with status %d after Ctrl-C, want 0", exit.ExitCode())
			} else {
				t.Error(err)
			}
		}
	case <-time.After(2 * time.Minute):
		t.Error("paygate dev did not stop within 2 minutes of Ctrl-C")
	}
}

// apiserverLoggedCallback reports whether the apiserver logged a provider callback naming trxID
// (the dev logger's console lines: time, level, logger, message, values, tab-separated).
func apiserverLoggedCallback(path, trxID string) bool {
	b, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "\tapiserver\t") && strings.Contains(strings.ToLower(line), "callback") && strings.Contains(line, trxID) {
			return true
		}
	}
	return false
}

// readCredentials reads the export lines of the credentials file `paygate dev` writes.
func readCredentials(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "="); ok && !strings.HasPrefix(k, "#") {
			env[k] = v
		}
	}
	if env["PAYGATE_API_SECRET"] == "" {
		t.Fatalf("%s holds no default sandbox credentials", path)
	}
	return env
}

// logDevOutput logs what `paygate dev` printed, without its info logs.
func logDevOutput(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var keep []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "\tINFO\t") {
			continue
		}
		keep = append(keep, line)
	}
	if len(keep) > 200 {
		keep = keep[len(keep)-200:]
	}
	t.Logf("paygate dev printed:\n%s", strings.Join(keep, "\n"))
}

// checkDevConsole signs the demo console owner in with what credentials.env says: the password,
// then the second factor's current code, as `paygate console code` prints it.
func checkDevConsole(t *testing.T, env map[string]string) {
	t.Helper()
	t.Setenv("PAYGATE_CONSOLE_TOTP_SECRET", env["PAYGATE_CONSOLE_TOTP_SECRET"])
	var code bytes.Buffer
	if rc := runConsole([]string{"code"}, &code, io.Discard); rc != 0 {
		t.Fatalf("paygate console code exited %d", rc)
	}
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	base := strings.TrimSuffix(env["PAYGATE_CONSOLE_URL"], "/console/")
	post := func(path string, form url.Values) string {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	page := post("/console/sign-in", url.Values{"email": {env["PAYGATE_CONSOLE_EMAIL"]}, "password": {env["PAYGATE_CONSOLE_PASSWORD"]}})
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if csrf == nil {
		t.Fatalf("the demo owner's password did not lead to the second factor: %s", page)
	}
	page = post("/console/second-factor", url.Values{"csrf": {csrf[1]}, "code": {strings.TrimSpace(code.String())}})
	if !strings.Contains(page, env["PAYGATE_CONSOLE_EMAIL"]) || !strings.Contains(page, `action="/console/sign-out"`) {
		t.Fatalf("the demo owner is not signed in to the console: %s", page)
	}
}
