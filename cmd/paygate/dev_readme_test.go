// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeSection is the text of README.md's section that starts with heading, up to the next
// heading of the same level.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", heading)
	}
	if end := strings.Index(after, "\n## "); end >= 0 {
		after = after[:end]
	}
	return after
}

// TestReadmeCommandTable: the README's table of commands names every command of `paygate help`.
func TestReadmeCommandTable(t *testing.T) {
	table := readmeSection(t, "## The binary")
	var listed []string
	for _, line := range strings.Split(table, "\n") {
		if m := regexp.MustCompile("^\\| `paygate ([a-z]+(?: [a-z]+)?)").FindStringSubmatch(line); m != nil {
			listed = append(listed, m[1])
		}
	}
	commands := 0
	for _, line := range strings.Split(usage, "\n") {
		m := regexp.MustCompile(`^  paygate ([a-z]+)(?: ([a-z]+))?`).FindStringSubmatch(line)
		if m == nil {
			continue
		}
		commands++
		cmd := m[1]
		if m[2] != "" {
			cmd += " " + m[2] // a subcommand: ledger check (one space apart; the description is further)
		}
		found := false
		for _, l := range listed {
			found = found || l == cmd
		}
		if !found {
			t.Errorf("README.md's command table lacks `paygate %s` (listed: %q)", cmd, listed)
		}
	}
	if commands < 5 {
		t.Fatalf("read only %d commands from the usage text", commands)
	}
}

// TestReadmeTestLayout: the README's layout row of test/ names every folder under test/.
func TestReadmeTestLayout(t *testing.T) {
	var row string
	for _, line := range strings.Split(readmeSection(t, "## Layout"), "\n") {
		if strings.HasPrefix(line, "| `test/` |") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("README.md's layout has no test/ row")
	}
	entries, err := os.ReadDir(filepath.Join("..", "..", "test"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "output" {
			continue // what the tests write (screenshots), ignored by git
		}
		if e.IsDir() && !strings.Contains(row, "`test/"+e.Name()+"`") {
			t.Errorf("README.md's test/ row does not name `test/%s`", e.Name())
		}
	}
}
