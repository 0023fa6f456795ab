// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The browser tests' shared helpers: finding Chromium, starting one per spec, screenshots and
// axe-core's accessibility check.

// chromiumPath finds Debian's Chromium. .ci/run installs it; elsewhere the browser tests say why
// they are skipped.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// requireChromium is Chromium's path; without one the spec fails in CI (.ci/run installs it) and
// is skipped elsewhere.
func requireChromium() string {
	GinkgoHelper()
	chromium := chromiumPath()
	if chromium == "" {
		if os.Getenv("CI") != "" {
			Fail("Chromium is not installed: .ci/run installs Debian's chromium package")
		}
		Skip("Chromium is not installed (apt-get install chromium); the browser tests run in CI")
	}
	return chromium
}

// axePath is where hack/install-axe.sh puts axe-core.
var axePath = filepath.Join("..", "..", "bin", "axe", "axe.min.js")

// axeViolation is one rule axe-core found broken on a page.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// expectAccessible runs axe-core in the tab's page and expects no serious or critical violation.
func expectAccessible(tab context.Context, page string) {
	GinkgoHelper()
	bad, checked := seriousViolations(tab, page)
	if checked {
		Expect(bad).To(BeEmpty(), "serious or critical accessibility violations on %s", page)
	}
}

// seriousViolations runs axe-core in the tab's page and returns its serious and critical
// violations; checked is false when axe-core is not installed (outside CI).
func seriousViolations(tab context.Context, page string) (bad []axeViolation, checked bool) {
	GinkgoHelper()
	js, err := os.ReadFile(axePath)
	if err != nil {
		if os.Getenv("CI") != "" {
			Fail("axe-core is missing: .ci/run runs hack/install-axe.sh")
		}
		AddReportEntry("accessibility not checked on "+page, "run hack/install-axe.sh")
		return nil, false
	}
	var found []axeViolation
	Expect(chromedp.Run(tab,
		chromedp.Evaluate(string(js), nil),
		chromedp.Evaluate(`axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.map(v => ({
			id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(" "))})))`, &found,
			func(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams { return p.WithAwaitPromise(true) }),
	)).To(Succeed(), "running axe-core on "+page)
	for _, v := range found {
		if v.Impact == "serious" || v.Impact == "critical" {
			bad = append(bad, v)
		}
	}
	return bad, true
}

// browser starts a Chromium of its own at a window size, for one spec.
func browser(chromium string, w, h int) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
		chromedp.WindowSize(w, h),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	DeferCleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(alloc)
	DeferCleanup(cancelTab)
	tab, cancelTimeout := context.WithTimeout(tab, 120*time.Second)
	DeferCleanup(cancelTimeout)
	Expect(chromedp.Run(tab)).To(Succeed(), "Chromium starts")
	return tab
}

// screenshotTo writes a picture for review. It is not an assertion: Chromium can stall a capture
// while a page is still painting, so a capture gets its own short deadline and a stalled one is
// reported instead of failing the spec (and of eating the tab's deadline).
func screenshotTo(tab context.Context, path string) {
	capture, cancel := context.WithTimeout(tab, 15*time.Second)
	defer cancel()
	var png []byte
	if err := chromedp.Run(capture, chromedp.CaptureScreenshot(&png)); err != nil {
		AddReportEntry("screenshot "+path+" not taken", err.Error())
		return
	}
	Expect(os.WriteFile(path, png, 0o644)).To(Succeed())
}
