// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/paygate/paygate/test/docs/markdown"
)

// upperCamel is a name such as PaymentFailed or Ready (not an UPPER_CASE code).
var upperCamel = regexp.MustCompile(`^[A-Z][a-z][A-Za-z0-9]*$`)

// kubernetesEvents finds the prose about Kubernetes Events (capitalised "Event", "Kubernetes
// events", "Warning event").
var kubernetesEvents = regexp.MustCompile(`\bEvents?\b|Kubernetes events|Warning events?`)

// namedReason finds "reason `X`" and "reason=X" (a condition's or an Event's reason).
var namedReason = regexp.MustCompile("\\breason(?: `|=)([A-Z][a-z][A-Za-z0-9]*)")

// TestDocsNameRealEventReasons checks the reasons of Kubernetes Events and conditions the
// documents name against the code:
//
//   - a code span in a table column headed "Reason" must be a Reason… constant's value (or, for
//     lower-case label values such as a metric's reasons, a string of the code);
//   - "reason `X`" and "reason=X" (kubectl's field selectors) must name a Reason… constant's value;
//   - every CamelCase code span of a paragraph about Kubernetes Events must be something the code
//     has: a reason, another string of the code (a condition type, a phase), or a declared name.
func TestDocsNameRealEventReasons(t *testing.T) {
	ix := code(t)
	if len(ix.reasons) < 20 {
		t.Fatalf("found only %d Reason… constants in the code; the index is broken", len(ix.reasons))
	}
	for _, d := range allDocs(t) {
		for _, tab := range d.Tables() {
			col := tab.Column("Reason")
			if col < 0 {
				continue
			}
			for i, row := range tab.Rows {
				if col >= len(row) {
					continue
				}
				for _, span := range markdown.CodeSpans(row[col]) {
					switch {
					case upperCamel.MatchString(span):
						if _, ok := ix.reasons[span]; !ok {
							t.Errorf("%s:%d: %q, in a Reason column, is no Reason… constant of the code", d.Path, tab.RowLines[i], span)
						}
					case !ix.literals[span]:
						t.Errorf("%s:%d: %q, in a Reason column, is no string of the code", d.Path, tab.RowLines[i], span)
					}
				}
			}
		}
		for i, line := range d.Lines {
			for _, m := range namedReason.FindAllStringSubmatch(line, -1) {
				if _, ok := ix.reasons[m[1]]; !ok {
					t.Errorf("%s:%d: reason %q is no Reason… constant of the code", d.Path, i+1, m[1])
				}
			}
		}
		for _, p := range d.Paragraphs() {
			if !kubernetesEvents.MatchString(p.Text) {
				continue
			}
			for _, span := range markdown.CodeSpans(p.Text) {
				if !upperCamel.MatchString(span) {
					continue
				}
				_, reason := ix.reasons[span]
				if !reason && !ix.literals[span] && !ix.idents[span] {
					t.Errorf("%s:%d: %q, in a paragraph about Kubernetes Events, is neither an Event reason nor anything else the code has", d.Path, p.Line, span)
				}
			}
		}
	}
}

// metricName finds paygate_… names that are not part of a longer word or a path.
var metricName = regexp.MustCompile(`(^|[^A-Za-z0-9_/.\-])(paygate_[a-z0-9_]*)`)

// TestDocsNameRealMetrics checks every paygate_… name of the documents, in prose and in code
// blocks, against the metrics the code declares (prometheus.*Opts names and NewDesc): a metric, a
// histogram's _bucket/_sum/_count, or a prefix followed by * (paygate_archive_*) or anchored by
// ^ (grep ^paygate_api). A paygate_… name that is no metric must be another string of the code
// (an OpenID Connect claim's default); a file name (paygate_test.yaml) is not a metric.
func TestDocsNameRealMetrics(t *testing.T) {
	ix := code(t)
	if len(ix.metrics) < 20 {
		t.Fatalf("found only %d metrics in the code; the index is broken", len(ix.metrics))
	}
	for _, d := range allDocs(t) {
		for i, line := range d.Lines {
			for _, loc := range metricName.FindAllStringSubmatchIndex(line, -1) {
				name := line[loc[4]:loc[5]]
				before, after := line[:loc[4]], line[loc[5]:]
				switch {
				case strings.HasPrefix(after, "*") || strings.HasSuffix(name, "_") || strings.HasSuffix(before, "^"):
					if !ix.metricPrefix(name) {
						t.Errorf("%s:%d: no metric of the code starts with %q", d.Path, i+1, name)
					}
				case len(after) > 1 && after[0] == '.' && isLetter(after[1]):
					// a file name
				case !ix.metric(name) && !ix.literals[name]:
					t.Errorf("%s:%d: metric %q is not declared in the code", d.Path, i+1, name)
				}
			}
		}
	}
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// subcommands are the paygate commands whose flags the documents may name, as they are typed.
var subcommands = []string{"manager", "apiserver", "dev", "ledger check", "provider check", "console invite", "console code"}

// paygateCommand finds a paygate command in a shell line or a code span: paygate, bin/paygate,
// /paygate, followed by a subcommand.
var paygateCommand = regexp.MustCompile(`(?:^|[\s;|&(])(?:\$ )?(?:[\w./-]*/)?paygate[ \t]+(manager|apiserver|dev|ledger[ \t]+check|provider[ \t]+check|console[ \t]+invite|console[ \t]+code)\b([^|;&]*)`)

var flagName = regexp.MustCompile(`(?:^|[\s\[(,=])--([a-z][a-z0-9*-]*)`)

// TestDocsNameRealFlags checks the documents' --flags against the flag sets of the real binary:
// it builds cmd/paygate (with -tags dev, so that paygate dev is there) and reads each command's
// flags from its -h. A flag on a paygate command line (a shell block's or a code span's
// `paygate apiserver --x`) must be a flag of that command; a code span that is a flag by itself
// (`--signature-tolerance`, `--archive-*-after`) must be a flag of some command. Other tools' flags
// are written with their command (`helm --set`, `etcd --unsafe-no-fsync`).
func TestDocsNameRealFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/paygate")
	}
	flags := commandFlags(t)
	any := map[string]bool{}
	for _, fs := range flags {
		for f := range fs {
			any[f] = true
		}
	}
	checkCommand := func(where string, m []string) {
		sub := strings.Join(strings.Fields(m[1]), " ")
		for _, f := range flagName.FindAllStringSubmatch(m[2], -1) {
			if !flags[sub][f[1]] {
				t.Errorf("%s: paygate %s has no flag --%s", where, sub, f[1])
			}
		}
	}
	for _, d := range allDocs(t) {
		for _, b := range d.Blocks() {
			switch b.Lang {
			case "go", "json", "yaml", "python", "javascript", "js", "text", "http", "sql":
				continue
			}
			for _, l := range markdown.ShellLines(b) {
				for _, m := range paygateCommand.FindAllStringSubmatch(strings.ReplaceAll(l.Text, "\\\n", " "), -1) {
					checkCommand(d.Path+":"+strconv.Itoa(l.N), m)
				}
			}
		}
		for i, line := range d.ProseLines() {
			for _, span := range markdown.CodeSpans(line) {
				if m := paygateCommand.FindStringSubmatch(span); m != nil {
					checkCommand(d.Path+":"+strconv.Itoa(i+1), m)
					continue
				}
				if !strings.HasPrefix(span, "--") {
					continue
				}
				name := strings.TrimPrefix(strings.FieldsFunc(span, func(r rune) bool { return r == ' ' || r == '=' })[0], "--")
				if !matchesAny(name, any) {
					t.Errorf("%s:%d: --%s is no flag of any paygate command (write another tool's flag with its command: `helm --set`)", d.Path, i+1, name)
				}
			}
		}
	}
}

func matchesAny(pattern string, names map[string]bool) bool {
	if !strings.Contains(pattern, "*") {
		return names[pattern]
	}
	for n := range names {
		if ok, _ := path.Match(pattern, n); ok {
			return true
		}
	}
	return false
}

// commandFlags builds cmd/paygate with -tags dev and returns each command's flags, read from its
// -h (the flag package's usage: "  -name type").
func commandFlags(t *testing.T) map[string]map[string]bool {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "paygate")
	build := exec.Command("go", "build", "-tags", "dev", "-o", bin, "./cmd/paygate")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags dev ./cmd/paygate: %v\n%s", err, out)
	}
	usageFlag := regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)
	out := map[string]map[string]bool{}
	for _, sub := range subcommands {
		args := strings.Fields(sub)
		if sub == "provider check" {
			args = append(args, "GATEWAY")
		}
		var stderr bytes.Buffer
		cmd := exec.Command(bin, append(args, "-h")...)
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		cmd.Env = append(os.Environ(), "PAYGATE_CONSOLE_TOTP_SECRET=")
		_ = cmd.Run() // -h exits 0 or 2 by command; what counts is the usage printed
		fs := map[string]bool{}
		for _, m := range usageFlag.FindAllStringSubmatch(stderr.String(), -1) {
			fs[m[1]] = true
		}
		if len(fs) == 0 && sub != "console code" {
			t.Fatalf("paygate %s -h printed no flags:\n%s", sub, stderr.String())
		}
		out[sub] = fs
	}
	return out
}

// envName finds the names of environment variables: every PAYGATE_… name, and the NAME of a
// NAME=value or a $NAME / ${NAME} (names with an underscore: BENCH_ROWS, KUBEBUILDER_ASSETS).
var (
	paygateEnv  = regexp.MustCompile(`\bPAYGATE_[A-Z0-9_]*[A-Z0-9]\b`)
	assignedEnv = regexp.MustCompile(`(?:^|[\s;(` + "`" + `])([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])=`)
	usedEnv     = regexp.MustCompile(`\$\{?([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])\b`)
)

// TestDocsNameRealEnvironmentVariables checks the environment variables the documents name: each
// must appear, as a whole word, in the repository outside README.md and docs/ (the Go code that
// reads it, the Makefile, hack/, config/, charts/, CI). A variable a shell block assigns itself
// and uses later ($TS, $BODY) is the block's own.
func TestDocsNameRealEnvironmentVariables(t *testing.T) {
	words := map[string]bool{}
	for _, w := range regexp.MustCompile(`[A-Z][A-Z0-9_]*`).FindAllString(repositoryText(t), -1) {
		words[w] = true
	}
	for _, d := range allDocs(t) {
		found := map[string]int{}
		note := func(name string, line int) {
			if _, ok := found[name]; !ok {
				found[name] = line
			}
		}
		for i, line := range d.Lines {
			for _, m := range paygateEnv.FindAllString(line, -1) {
				note(m, i+1)
			}
		}
		for i, line := range d.ProseLines() {
			for _, span := range markdown.CodeSpans(line) {
				for _, m := range assignedEnv.FindAllStringSubmatch(span, -1) {
					note(m[1], i+1)
				}
			}
		}
		for _, b := range d.Blocks() {
			own := map[string]bool{}
			for _, m := range regexp.MustCompile(`(?m)^\s*(?:export\s+)?([A-Z][A-Z0-9_]*)=`).FindAllStringSubmatch(b.Body, -1) {
				own[m[1]] = true
			}
			for _, l := range markdown.ShellLines(b) {
				for _, m := range assignedEnv.FindAllStringSubmatch(l.Text, -1) {
					note(m[1], l.N)
				}
				for _, m := range usedEnv.FindAllStringSubmatch(l.Text, -1) {
					if !own[m[1]] {
						note(m[1], l.N)
					}
				}
			}
		}
		names := make([]string, 0, len(found))
		for n := range found {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if !words[n] {
				t.Errorf("%s:%d: environment variable %s appears nowhere in the repository outside the documents", d.Path, found[n], n)
			}
		}
	}
}

// repositoryText is the text of the repository's files outside README.md and docs/: Go files,
// the Makefile, hack/, config/, charts/, .ci/ and the Dockerfile.
func repositoryText(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	var b strings.Builder
	for _, rel := range goFiles(t, true) {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	for _, dir := range []string{"hack", "config", "charts", ".ci"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err == nil {
				b.Write(data)
			}
			return err
		})
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"Makefile", "Dockerfile"} {
		if data, err := os.ReadFile(filepath.Join(root, f)); err == nil {
			b.Write(data)
		}
	}
	return b.String()
}
