// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// codeIndex is what the module's Go sources define, read with go/parser.
type codeIndex struct {
	// reasons are the values of the string constants named Reason… of non-test code: the reasons
	// of Kubernetes Events and of status conditions.
	reasons map[string]string // value -> file
	// literals are the values of every string literal of non-test code.
	literals map[string]bool
	// idents are the names declared anywhere (tests included): functions, methods, types,
	// constants, variables, struct fields.
	idents map[string]bool
	// metrics are the Prometheus metric names non-test code declares: the Name of a
	// prometheus.*Opts literal or the first argument of prometheus.NewDesc; histograms[name] says
	// whether the metric is a histogram (its _bucket, _sum and _count series exist too).
	metrics    map[string]string // name -> file
	histograms map[string]bool
}

var (
	indexOnce sync.Once
	index     *codeIndex
	indexErr  error
)

// code returns the index of the module's Go sources, built once per test binary.
func code(t testing.TB) *codeIndex {
	t.Helper()
	root := repoRoot(t)
	all := goFiles(t, true)
	indexOnce.Do(func() {
		ix := &codeIndex{reasons: map[string]string{}, literals: map[string]bool{}, idents: map[string]bool{},
			metrics: map[string]string{}, histograms: map[string]bool{}}
		fset := token.NewFileSet()
		for _, rel := range all {
			f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
			if err != nil {
				indexErr = err
				return
			}
			ix.add(rel, f, !strings.HasSuffix(rel, "_test.go"))
		}
		index = ix
	})
	if indexErr != nil {
		t.Fatal(indexErr)
	}
	return index
}

func (ix *codeIndex) add(rel string, f *ast.File, nonTest bool) {
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			ix.idents[n.Name.Name] = true
		case *ast.TypeSpec:
			ix.idents[n.Name.Name] = true
		case *ast.Field:
			for _, name := range n.Names {
				ix.idents[name.Name] = true
			}
		case *ast.ValueSpec:
			for i, name := range n.Names {
				ix.idents[name.Name] = true
				if nonTest && strings.HasPrefix(name.Name, "Reason") && i < len(n.Values) {
					if s, ok := stringLit(n.Values[i]); ok {
						ix.reasons[s] = rel
					}
				}
			}
		case *ast.BasicLit:
			if s, ok := stringLit(n); ok && nonTest {
				ix.literals[s] = true
			}
		case *ast.CompositeLit:
			if !nonTest {
				return true
			}
			sel, ok := n.Type.(*ast.SelectorExpr)
			if !ok || !strings.HasSuffix(sel.Sel.Name, "Opts") {
				return true
			}
			for _, e := range n.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
					if s, ok := stringLit(kv.Value); ok {
						ix.metrics[s] = rel
						ix.histograms[s] = sel.Sel.Name == "HistogramOpts"
					}
				}
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "NewDesc" && nonTest && len(n.Args) > 0 {
				if s, ok := stringLit(n.Args[0]); ok {
					ix.metrics[s] = rel
				}
			}
		}
		return true
	})
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// metric says whether name is a series of a declared metric: the metric itself, or a histogram's
// _bucket, _sum or _count.
func (ix *codeIndex) metric(name string) bool {
	if _, ok := ix.metrics[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && ix.histograms[base] {
			return true
		}
	}
	return false
}

// metricPrefix says whether some declared metric starts with prefix.
func (ix *codeIndex) metricPrefix(prefix string) bool {
	for m := range ix.metrics {
		if strings.HasPrefix(m, prefix) {
			return true
		}
	}
	return false
}
