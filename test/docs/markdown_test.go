// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package docs_test keeps the documentation true: it reads README.md and docs/*.md when it runs
// and checks what they say against the code. The names they give (Kubernetes Event reasons,
// metrics, flags, environment variables) must exist; their Go blocks must build, and the ones
// that can run here run (docs/api.md's sign on its worked example, the webhook receiver of
// docs/webhooks-receiver.md on the document's payloads); the JSON of docs/api.md must match the
// OpenAPI document. Nothing the documents show is copied here: change a document and these tests
// check the new text. What needs the real stack runs in the end-to-end suite
// (test/e2e/docs_test.go): every hack/paygate-curl.sh line of README.md and docs/api.md, the
// README's Go calls, and docs/api.md's examples compared with the real answers. Both read the
// documents with test/docs/markdown and build Go blocks with test/docs/goexample.
package docs_test

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/paygate/paygate/test/docs/markdown"
)

// repoRoot is the module's root directory (where go.mod is).
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := markdown.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// allDocs reads README.md and every docs/*.md.
func allDocs(t testing.TB) []*markdown.Doc {
	t.Helper()
	docs, err := markdown.ReadAll(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// docsOnly is allDocs without README.md.
func docsOnly(t testing.TB) []*markdown.Doc {
	var out []*markdown.Doc
	for _, d := range allDocs(t) {
		if filepath.Dir(d.Path) == "docs" {
			out = append(out, d)
		}
	}
	return out
}

// goFiles lists the module's .go files (relative paths), skipping testdata, hidden and
// underscore directories, bin/ and node_modules; tests says whether _test.go files are kept.
func goFiles(t testing.TB, tests bool) []string {
	t.Helper()
	root := repoRoot(t)
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "bin" || name == "node_modules" || name[0] == '.' || name[0] == '_') {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(name) != ".go" || (!tests && len(name) > 8 && name[len(name)-8:] == "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}
