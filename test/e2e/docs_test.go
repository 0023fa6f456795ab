// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/apiserver"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/test/docs/goexample"
	"github.com/paygate/paygate/test/docs/markdown"
	"github.com/paygate/paygate/test/testenv"
)

// The documents' commands against the real stack: make run's demo configuration, read from
// config/samples, in a namespace of the spec; every hack/paygate-curl.sh line of README.md and
// docs/api.md, read when the spec runs, executed by bash with the real script and the business's
// sandbox credentials; the README's Go calls built and run. test/docs checks the rest of the
// documents without a cluster.

// curlDocs are the documents whose hack/paygate-curl.sh lines run, in this order.
var curlDocs = []string{"README.md", "docs/api.md"}

// demoFixture is make run's demo business duka-online in a namespace of the spec, with its
// sandbox credentials as credentials.env gives them.
type demoFixture struct {
	*merchantFixture
	ns string
	// env are the PAYGATE_* variables hack/paygate-curl.sh reads.
	env []string
}

// demoMerchant creates the demo configuration of config/samples (what paygate dev applies):
// its gateways (cluster-scoped, so renamed with a suffix of the spec), duka-online with its
// gateway selection and billing plans; and, as paygate dev adds them, a pawaPay gateway (TZS) and
// a Daraja gateway (KES) on the fakes of test/, serving sandbox payments, in the selection too.
func demoMerchant() *demoFixture {
	GinkgoHelper()
	ns := newNamespace()
	root, err := testenv.ModuleRoot()
	Expect(err).NotTo(HaveOccurred())
	suffix := uniqueName("docs")
	renamed := map[paygatev1.GatewayCode]paygatev1.GatewayCode{}
	var (
		merchant  *paygatev1.Merchant
		selection *paygatev1.GatewaySelection
		plans     []*paygatev1.BillingPlan
	)
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "*.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(files).NotTo(BeEmpty())
	for _, file := range files {
		data, err := os.ReadFile(file)
		Expect(err).NotTo(HaveOccurred())
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var u unstructured.Unstructured
			if err := dec.Decode(&u.Object); err == io.EOF {
				break
			} else {
				Expect(err).NotTo(HaveOccurred(), file)
			}
			if len(u.Object) == 0 {
				continue
			}
			convert := func(into any) {
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)).To(Succeed(), file)
			}
			switch u.GetKind() {
			case "Gateway":
				var g paygatev1.Gateway
				convert(&g)
				code := paygatev1.GatewayCode(g.Name)
				g.Name = g.Name + "-" + suffix
				renamed[code] = paygatev1.GatewayCode(g.Name)
				Expect(k8s.Create(ctx, &g)).To(Succeed())
				testenv.DeleteAfter(ctx, k8s, &g)
			case "Merchant":
				var m paygatev1.Merchant
				convert(&m)
				if m.Spec.BusinessStatus == paygatev1.BusinessApproved {
					merchant = &m
				}
			case "GatewaySelection":
				selection = &paygatev1.GatewaySelection{}
				convert(selection)
			case "BillingPlan":
				p := &paygatev1.BillingPlan{}
				convert(p)
				plans = append(plans, p)
			}
		}
	}
	Expect(merchant).NotTo(BeNil(), "config/samples has no approved merchant")
	Expect(selection).NotTo(BeNil(), "config/samples has no gateway selection")
	// The provider-backed gateways paygate dev adds, on the fakes, serving sandbox payments.
	_, pawapay := pawapayFixture(ns, func(g *paygatev1.Gateway) {
		g.Name, g.Spec.DisplayName, g.Spec.Sandbox = "pawapay-tz-"+suffix, "Vodacom M-Pesa via pawaPay", paygatev1.SandboxProvider
	})
	_, daraja := darajaFixture(ns, func(g *paygatev1.Gateway) {
		g.Name, g.Spec.DisplayName, g.Spec.Sandbox = "daraja-ke-"+suffix, "M-Pesa Kenya via Daraja", paygatev1.SandboxProvider
		g.Spec.Fees = paygatev1.GatewayFees{Percent: "1.5", Fixed: "5"}
	})
	for code, name := range renamed {
		var g paygatev1.Gateway
		Eventually(func(gm Gomega) {
			gm.Expect(k8s.Get(ctx, client.ObjectKey{Name: string(name)}, &g)).To(Succeed())
			gm.Expect(g.Status.ID).NotTo(BeZero(), "gateway %s (%s)", name, code)
		}).Should(Succeed())
	}
	selection.Namespace, selection.ResourceVersion = ns, ""
	for i, code := range selection.Spec.Gateways {
		Expect(renamed).To(HaveKey(code), "the selection names a gateway config/samples does not have")
		selection.Spec.Gateways[i] = renamed[code]
	}
	selection.Spec.Gateways = append(selection.Spec.Gateways, paygatev1.GatewayCode(pawapay.Name), paygatev1.GatewayCode(daraja.Name))
	Expect(k8s.Create(ctx, selection)).To(Succeed())

	spec := merchant.Spec
	f := createMerchant(ns, merchant.Name, func(m *paygatev1.Merchant) { m.Spec = spec })
	for _, p := range plans {
		p.Namespace, p.ResourceVersion = ns, ""
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) {
			resp, err := f.sandbox.Do(ctx, http.MethodGet, "/api/v1/billing/plans/"+string(p.Spec.Code), nil, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(resp.Body))
		}).Should(Succeed())
	}

	var secret corev1.Secret
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: credentials.SecretName(merchant.Name, paygatev1.EnvironmentSandbox)}, &secret)).To(Succeed())
	set, ok := credentials.SetFromData(secret.Data)
	Expect(ok).To(BeTrue())
	return &demoFixture{merchantFixture: f, ns: ns, env: []string{
		"PAYGATE_BASE_URL=" + baseURL, "PAYGATE_ENVIRONMENT=sandbox",
		"PAYGATE_MERCHANT_KEY=" + set.BusinessID, "PAYGATE_API_KEY=" + set.APIKey, "PAYGATE_API_SECRET=" + set.APISecret,
	}}
}

// settled waits, as a reader of the documents does before the next command, until the business's
// money stands still: no prompt on its way to a customer or waiting for one, every payout and
// refund final, and the balance counting every successful payment.
func (d *demoFixture) settled() {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var payments paygatev1.PaymentList
		g.Expect(k8s.List(ctx, &payments, client.InNamespace(d.ns))).To(Succeed())
		successes := map[string]int64{}
		for i := range payments.Items {
			p := &payments.Items[i]
			g.Expect(p.AwaitingCustomer()).To(BeFalse(), "payment %s awaits its customer", p.Name)
			if p.Status.Phase == paygatev1.PaymentSuccess && p.Spec.Environment == paygatev1.EnvironmentSandbox {
				successes[string(p.Spec.Currency)]++
			}
		}
		var payouts paygatev1.PayoutList
		g.Expect(k8s.List(ctx, &payouts, client.InNamespace(d.ns))).To(Succeed())
		for i := range payouts.Items {
			g.Expect(payouts.Items[i].Terminal()).To(BeTrue(), "payout %s", payouts.Items[i].Name)
		}
		var refunds paygatev1.RefundList
		g.Expect(k8s.List(ctx, &refunds, client.InNamespace(d.ns))).To(Succeed())
		for i := range refunds.Items {
			g.Expect(refunds.Items[i].Terminal()).To(BeTrue(), "refund %s", refunds.Items[i].Name)
		}
		resp, err := d.sandbox.Do(ctx, http.MethodGet, "/api/v1/balance", nil, nil)
		g.Expect(err).NotTo(HaveOccurred())
		var balance struct {
			Data struct {
				Balances []struct {
					Currency        string `json:"currency"`
					SettledPayments int64  `json:"settled_payments"`
				} `json:"balances"`
			} `json:"data"`
		}
		g.Expect(json.Unmarshal(resp.Body, &balance)).To(Succeed())
		for _, b := range balance.Data.Balances {
			g.Expect(b.SettledPayments).To(Equal(successes[b.Currency]), "the %s balance counts every successful payment", b.Currency)
		}
	}).WithTimeout(3 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// docAnswer is the server's answer to one documented command.
type docAnswer struct {
	where        string
	method, path string
	status       int
	value        any
}

var (
	placeholder    = regexp.MustCompile(`<([a-z_]+)>`)
	statusComment  = regexp.MustCompile(`^#\s*([1-5][0-9][0-9])\b`)
	curlScriptLine = regexp.MustCompile(`^\s*hack/paygate-curl\.sh\s`)
)

// lookup finds key in an answer, breadth first (the top level, then data, then data's first
// item...), as a reader looks for "the id of the answer".
func lookup(v any, key string) (string, bool) {
	queue := []any{v}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		switch c := cur.(type) {
		case map[string]any:
			if x, ok := c[key]; ok {
				switch x := x.(type) {
				case string:
					return x, true
				case json.Number:
					return x.String(), true
				}
			}
			for _, k := range sortedMapKeys(c) {
				queue = append(queue, c[k])
			}
		case []any:
			if len(c) > 0 {
				queue = append(queue, c[0])
			}
		}
	}
	return "", false
}

func sortedMapKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// commentOf is a shell line's comment ("" when none): from the first # outside quotes that
// starts a word.
func commentOf(line string) string {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[i:]
		}
	}
	return ""
}

// runCurlLines runs every hack/paygate-curl.sh line of the document in order, as the business,
// and returns the answers. A placeholder (<id>, <trx_id>, <next_after>) takes the value of that
// name in the latest answer that has it before its first use in its block, and keeps it in the
// block, as a reader pastes one id into the lines that follow. Each line must be answered 2xx, or the status its
// comment starts with (# 409 ...).
func runCurlLines(d *demoFixture, root string, doc *markdown.Doc, answers []docAnswer) []docAnswer {
	GinkgoHelper()
	ran := 0
	for _, b := range doc.Blocks() {
		bound := map[string]string{} // a placeholder names one value throughout its block
		for _, l := range markdown.ShellLines(b) {
			if !curlScriptLine.MatchString(l.Text) {
				continue
			}
			where := fmt.Sprintf("%s:%d", doc.Path, l.N)
			text := l.Text
			var missing []string
			text = placeholder.ReplaceAllStringFunc(text, func(m string) string {
				name := m[1 : len(m)-1]
				if v, ok := bound[name]; ok {
					return v
				}
				for i := len(answers) - 1; i >= 0; i-- {
					if v, ok := lookup(answers[i].value, name); ok {
						bound[name] = v
						return v
					}
				}
				missing = append(missing, name)
				return m
			})
			Expect(missing).To(BeEmpty(), "%s: no earlier answer has %v for the line's placeholders:\n%s", where, missing, l.Text)
			d.settled()
			answer, err := runCurlLine(d, root, where, text)
			ran++
			want := "2xx"
			if m := statusComment.FindStringSubmatch(strings.TrimSpace(commentOf(strings.ReplaceAll(text, "\\\n", " ")))); m != nil {
				want = m[1]
			}
			ok := err == nil && ((want == "2xx" && answer.status/100 == 2) || fmt.Sprint(answer.status) == want)
			Expect(ok).To(BeTrue(), "%s: %s\nanswered %d, want %s: %v %s", where, l.Text, answer.status, want, err, answer.raw)
			if answer.value != nil {
				answers = append(answers, answer.docAnswer)
			}
		}
	}
	Expect(ran).To(BeNumerically(">", 0), "%s has no hack/paygate-curl.sh line: is the reader broken?", doc.Path)
	return answers
}

type rawAnswer struct {
	docAnswer
	raw string
}

// runCurlLine runs one documented line with bash and the real script, capturing the status and
// the body with curl arguments added after the line's own.
func runCurlLine(d *demoFixture, root, where, line string) (rawAnswer, error) {
	dir := GinkgoT().TempDir()
	out, args := filepath.Join(dir, "body"), filepath.Join(dir, "args")
	script := "set -u\n" +
		// The script's arguments are METHOD PATH [BODY] [curl arguments]: an empty body comes
		// before the added curl arguments when the line has none.
		"run() { printf '%s\\n' \"$2\" \"$3\" > \"$DOC_ARGS\"; if [ $# -eq 3 ]; then set -- \"$@\" ''; fi; \"$@\" -o \"$DOC_OUT\" -w '%{http_code}'; }\n" +
		"run " + line + "\n"
	cmdCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cmdCtx, "bash", "-c", script)
	cmd.Dir = root
	cmd.Env = append(append(os.Environ(), d.env...), "DOC_OUT="+out, "DOC_ARGS="+args)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	a := rawAnswer{docAnswer: docAnswer{where: where}}
	if argv, rerr := os.ReadFile(args); rerr == nil {
		parts := strings.SplitN(strings.TrimSpace(string(argv)), "\n", 2)
		if len(parts) == 2 {
			a.method, a.path = strings.ToUpper(parts[0]), parts[1]
		}
	}
	body, _ := os.ReadFile(out)
	a.raw = string(body)
	fmt.Sscan(stdout.String(), &a.status)
	if err != nil {
		return a, fmt.Errorf("bash: %v: %s", err, stderr.String())
	}
	v, jerr := markdown.DecodeJSON(body)
	if jerr != nil {
		return a, fmt.Errorf("the answer is not JSON: %v", jerr)
	}
	a.value = v
	return a, nil
}

// compareExamples compares docs/api.md's JSON examples with the real answers: an example under a
// route's heading with that route's success answers, a webhook's example with the payloads the
// events API gave of its type. Every field an example shows that an answer has must have the
// answer's JSON type. It returns how many examples were compared.
func compareExamples(api *markdown.Doc, answers []docAnswer) int {
	GinkgoHelper()
	spec, err := openapi3.NewLoader().LoadFromData(apiserver.OpenAPIDocument())
	Expect(err).NotTo(HaveOccurred())
	templates := spec.Paths.Keys()
	byRoute := map[string]markdown.Shape{}
	events := map[string]markdown.Shape{}
	for _, a := range answers {
		if a.status/100 != 2 {
			continue
		}
		route := a.method + " " + markdown.BestRoute(templates, a.path)
		if byRoute[route] == nil {
			byRoute[route] = markdown.Shape{}
		}
		byRoute[route].Add("", a.value)
		if route == "GET /api/v1/events" {
			list, _ := a.value.(map[string]any)
			items, _ := list["data"].([]any)
			for _, it := range items {
				ev, _ := it.(map[string]any)
				typ, _ := ev["type"].(string)
				if events[typ] == nil {
					events[typ] = markdown.Shape{}
				}
				events[typ].Add("", ev["payload"])
			}
		}
	}
	examples, err := markdown.JSONExamples(api)
	Expect(err).NotTo(HaveOccurred())
	compared := 0
	for _, ex := range examples {
		obj, _ := ex.Value.(map[string]any)
		var real markdown.Shape
		var against string
		switch {
		case obj != nil && obj["error"] != nil, ex.Fragment:
			continue // errors and fragments of records: checked against the OpenAPI document (test/docs)
		case ex.Method != "":
			against = ex.Method + " " + markdown.BestRoute(templates, ex.Path)
			real = byRoute[against]
			Expect(real).NotTo(BeNil(), "%s: no hack/paygate-curl.sh line of %v calls %s, so this example is not checked against a real answer", ex.Block.Where(), curlDocs, against)
		case obj != nil && obj["api_version"] != nil && obj["type"] != nil:
			typ, _ := obj["type"].(string)
			against = "the payloads of " + typ + " events"
			real = events[typ]
			Expect(real).NotTo(BeNil(), "%s: the events API listed no %s event, so this example is not checked against a real one", ex.Block.Where(), typ)
		default:
			Fail(fmt.Sprintf("%s: a JSON example under %q this spec does not know how to check", ex.Block.Where(), ex.Section))
		}
		mismatches, unseen := markdown.CompareShapes(markdown.ShapeOf(ex.Value), real)
		for _, m := range mismatches {
			AddReportEntry("docs/api.md example differs from the server", fmt.Sprintf("%s: %s is %s in the example, %s in %s", ex.Block.Where(), m.Path, m.Doc, m.Real, against))
		}
		Expect(mismatches).To(BeEmpty(), "%s: fields whose type differs from %s", ex.Block.Where(), against)
		if len(unseen) > 0 {
			fmt.Fprintf(GinkgoWriter, "%s: fields no real answer of %s had (optional ones): %v\n", ex.Block.Where(), against, unseen)
		}
		compared++
	}
	return compared
}

var _ = Describe("The documents' commands", func() {
	It("runs every hack/paygate-curl.sh line of README.md and docs/api.md, and docs/api.md's examples have the real answers' fields", func() {
		demo := demoMerchant()
		root, err := testenv.ModuleRoot()
		Expect(err).NotTo(HaveOccurred())
		var answers []docAnswer
		var api *markdown.Doc
		for _, path := range curlDocs {
			doc, err := markdown.Read(root, path)
			Expect(err).NotTo(HaveOccurred())
			answers = runCurlLines(demo, root, doc, answers)
			if path == "docs/api.md" {
				api = doc
			}
		}
		By("comparing docs/api.md's examples with the answers")
		// The webhook examples are compared with the events of what the lines did: wait until the
		// events API lists an event of each type an example shows (an event is born at its first
		// attempt, a moment after its payment or payout ended).
		examples, err := markdown.JSONExamples(api)
		Expect(err).NotTo(HaveOccurred())
		var types []string
		for _, ex := range examples {
			if obj, ok := ex.Value.(map[string]any); ok && ex.Method == "" && obj["api_version"] != nil {
				if typ, ok := obj["type"].(string); ok {
					types = append(types, typ)
				}
			}
		}
		var events docAnswer
		Eventually(func(g Gomega) {
			resp, err := demo.sandbox.Do(ctx, http.MethodGet, "/api/v1/events?limit=100", nil, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(resp.Body))
			v, err := markdown.DecodeJSON(resp.Body)
			g.Expect(err).NotTo(HaveOccurred())
			listed := map[string]bool{}
			for _, it := range v.(map[string]any)["data"].([]any) {
				typ, _ := it.(map[string]any)["type"].(string)
				listed[typ] = true
			}
			for _, typ := range types {
				g.Expect(listed).To(HaveKey(typ), "no %s event listed yet", typ)
			}
			events = docAnswer{where: "events", method: http.MethodGet, path: "/api/v1/events", status: resp.StatusCode, value: v}
		}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(compareExamples(api, append(answers, events))).To(BeNumerically(">", 10))
	})

	It("runs the README's Go example against the apiserver as the demo business", func() {
		demo := demoMerchant()
		fund(demo.merchantFixture, "10000") // the README's curl lines settle payments first
		root, err := testenv.ModuleRoot()
		Expect(err).NotTo(HaveOccurred())
		readme, err := markdown.Read(root, "README.md")
		Expect(err).NotTo(HaveOccurred())
		resolver, err := goexample.NewResolver(root)
		Expect(err).NotTo(HaveOccurred())
		ran := 0
		for _, b := range readme.BlocksOf("go") {
			ex, err := goexample.Parse(b)
			Expect(err).NotTo(HaveOccurred())
			if ex.Kind == goexample.Declarations || !ex.Uses("paygate", "New") {
				continue
			}
			dir, remove, err := goexample.TempDir(root)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(remove)
			Expect(ex.Write(filepath.Join(dir, "readme"), resolver, nil)).To(Succeed())
			bin := filepath.Join(GinkgoT().TempDir(), "readme-example")
			Expect(goexample.Build(root, filepath.Join(dir, "readme"), bin)).To(Succeed(), "%s: the README's Go example does not build", b.Where())
			runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			cmd := exec.CommandContext(runCtx, bin)
			cmd.Env = append(os.Environ(), demo.env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err = cmd.Run()
			cancel()
			Expect(err).NotTo(HaveOccurred(), "%s: the README's Go example failed: %s", b.Where(), stderr.String())
			ran++
			if ex.Kind == goexample.Program { // a whole program: it succeeded and said something
				Expect(stdout.String()).NotTo(BeEmpty(), "%s: the README's Go program printed nothing", b.Where())
				continue
			}
			vars, err := goexample.Output(stdout.Bytes())
			Expect(err).NotTo(HaveOccurred())
			for _, name := range ex.Variables() {
				Expect(string(vars[name])).NotTo(Or(BeEmpty(), Equal("null")), "%s: %s is nil after the example ran", b.Where(), name)
			}
		}
		Expect(ran).To(BeNumerically(">", 0), "README.md has no Go block calling paygate.New")
	})
})
