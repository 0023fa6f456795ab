// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package markdown reads the repository's Markdown documents (README.md and docs/*.md) for the
// tests that check them against the code (test/docs, and test/e2e for the commands that run
// against the real stack): fenced code blocks, tables, paragraphs and code spans, each with the
// line it starts on, so a failure names the document and the line to fix.
package markdown

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Module is the module path of the repository whose documents these are.
const Module = "github.com/paygate/paygate"

// RepoRoot finds the repository's root: the nearest directory at or above the working
// directory whose go.mod declares Module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			first, _, _ := strings.Cut(string(b), "\n")
			if strings.TrimSpace(first) == "module "+Module {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of " + Module + " above the working directory")
		}
		dir = parent
	}
}

// Doc is one Markdown document.
type Doc struct {
	// Path is the document's path from the repository root, with slashes ("docs/api.md").
	Path string
	// Lines are its lines, without line endings; Lines[0] is line 1.
	Lines []string

	blocks []Block
	// fenced[i] says whether line i+1 belongs to a fenced block (its fences included).
	fenced []bool
}

// Block is a fenced code block.
type Block struct {
	Doc string
	// Line is the line of the opening fence; the body starts on the next line.
	Line int
	// Lang is the fence's info string's first word ("go", "sh", "json"; "" when none).
	Lang string
	// Body is the text between the fences, one "\n" after each line.
	Body string
}

// Where names the block for failure messages: "docs/api.md:165".
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.Doc, b.Line) }

// ReadAll reads README.md and docs/*.md under root, README.md first, then by name.
func ReadAll(root string) ([]*Doc, error) {
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	rels := []string{"README.md"}
	for _, p := range paths {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil, err
		}
		rels = append(rels, filepath.ToSlash(rel))
	}
	var docs []*Doc
	for _, rel := range rels {
		d, err := Read(root, rel)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// Read reads one document, rel being its path from root with slashes.
func Read(root, rel string) (*Doc, error) {
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d := &Doc{Path: rel}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		d.Lines = append(d.Lines, strings.TrimSuffix(sc.Text(), "\r"))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	d.parseBlocks()
	return d, nil
}

var fence = regexp.MustCompile("^ {0,3}(```+|~~~+)\\s*([^`\\s]*)")

func (d *Doc) parseBlocks() {
	d.fenced = make([]bool, len(d.Lines))
	for i := 0; i < len(d.Lines); i++ {
		m := fence.FindStringSubmatch(d.Lines[i])
		if m == nil {
			continue
		}
		open, lang := m[1], strings.ToLower(m[2])
		start := i
		var body strings.Builder
		j := i + 1
		for ; j < len(d.Lines); j++ {
			if strings.HasPrefix(strings.TrimLeft(d.Lines[j], " "), open[:3]) && strings.TrimSpace(strings.Trim(strings.TrimSpace(d.Lines[j]), open[:1])) == "" {
				break
			}
			body.WriteString(d.Lines[j])
			body.WriteByte('\n')
		}
		for k := start; k <= j && k < len(d.Lines); k++ {
			d.fenced[k] = true
		}
		d.blocks = append(d.blocks, Block{Doc: d.Path, Line: start + 1, Lang: lang, Body: body.String()})
		i = j
	}
}

// Blocks returns the document's fenced code blocks in order.
func (d *Doc) Blocks() []Block { return d.blocks }

// BlocksOf returns the fenced blocks whose language is one of langs.
func (d *Doc) BlocksOf(langs ...string) []Block {
	var out []Block
	for _, b := range d.blocks {
		for _, l := range langs {
			if b.Lang == l {
				out = append(out, b)
				break
			}
		}
	}
	return out
}

// Paragraph is a run of prose lines (not in a fenced block, not a table, not blank).
type Paragraph struct {
	Line int
	// Text is the paragraph's lines joined with spaces.
	Text string
}

// Paragraphs returns the document's prose paragraphs. A list item starts a paragraph of its own.
func (d *Doc) Paragraphs() []Paragraph {
	var out []Paragraph
	var cur []string
	start := 0
	flush := func() {
		if len(cur) > 0 {
			out = append(out, Paragraph{Line: start, Text: strings.Join(cur, " ")})
		}
		cur = nil
	}
	for i, l := range d.Lines {
		t := strings.TrimSpace(l)
		if d.fenced[i] || t == "" || strings.HasPrefix(t, "|") {
			flush()
			continue
		}
		if isListItem(t) || strings.HasPrefix(t, "#") {
			flush()
		}
		if len(cur) == 0 {
			start = i + 1
		}
		cur = append(cur, t)
		if strings.HasPrefix(t, "#") {
			flush()
		}
	}
	flush()
	return out
}

var listItem = regexp.MustCompile(`^([-*+]|\d+\.)\s`)

func isListItem(s string) bool { return listItem.MatchString(s) }

// Table is a pipe table.
type Table struct {
	Doc    string
	Line   int
	Header []string
	// Rows are the body rows' cells; RowLines their line numbers.
	Rows     [][]string
	RowLines []int
}

// Column is the index of the header cell equal to name, or -1.
func (t Table) Column(name string) int {
	for i, h := range t.Header {
		if h == name {
			return i
		}
	}
	return -1
}

// Tables returns the document's pipe tables.
func (d *Doc) Tables() []Table {
	var out []Table
	for i := 0; i+1 < len(d.Lines); i++ {
		if d.fenced[i] || !isRow(d.Lines[i]) || !isDelimiterRow(d.Lines[i+1]) {
			continue
		}
		t := Table{Doc: d.Path, Line: i + 1, Header: cells(d.Lines[i])}
		j := i + 2
		for ; j < len(d.Lines) && !d.fenced[j] && isRow(d.Lines[j]); j++ {
			t.Rows = append(t.Rows, cells(d.Lines[j]))
			t.RowLines = append(t.RowLines, j+1)
		}
		out = append(out, t)
		i = j - 1
	}
	return out
}

func isRow(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "|") }

var delimiterRow = regexp.MustCompile(`^\s*\|(\s*:?-{3,}:?\s*\|)+\s*$`)

func isDelimiterRow(l string) bool { return delimiterRow.MatchString(l) }

// cells splits a table row on the pipes that are not escaped and not inside a code span.
func cells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	if strings.HasSuffix(row, "|") && !strings.HasSuffix(row, `\|`) {
		row = row[:len(row)-1]
	}
	var out []string
	var cur strings.Builder
	inCode := false
	for i := 0; i < len(row); i++ {
		c := row[i]
		switch {
		case c == '\\' && i+1 < len(row) && row[i+1] == '|':
			cur.WriteByte('|')
			i++
		case c == '`':
			inCode = !inCode
			cur.WriteByte(c)
		case c == '|' && !inCode:
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// CodeSpans returns the contents of the code spans of a piece of prose.
func CodeSpans(s string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// ProseLines returns the document's lines with those of fenced blocks blanked, so that indexes
// stay line numbers (ProseLines()[i] is line i+1).
func (d *Doc) ProseLines() []string {
	out := make([]string, len(d.Lines))
	for i, l := range d.Lines {
		if !d.fenced[i] {
			out[i] = l
		}
	}
	return out
}

// Line is one logical line of a shell block.
type Line struct {
	// N is the line number, in the document, of its first physical line.
	N int
	// Text is the logical line as written, its physical lines joined with their "\\\n".
	Text string
}

// ShellLines splits a shell block into logical lines: a line ending in a backslash continues on
// the next one. Blank lines are left out.
func ShellLines(b Block) []Line {
	var out []Line
	phys := strings.Split(strings.TrimSuffix(b.Body, "\n"), "\n")
	for i := 0; i < len(phys); i++ {
		start := i
		text := phys[i]
		for strings.HasSuffix(text, `\`) && i+1 < len(phys) {
			i++
			text += "\n" + phys[i]
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		out = append(out, Line{N: b.Line + 1 + start, Text: text})
	}
	return out
}
