// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package markdown

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// JSONExample is a JSON block with the section that shows it.
type JSONExample struct {
	Block Block
	// Section is the nearest heading above the block, without its #s.
	Section string
	// Method and Path are the route of that heading ("### POST /api/v1/payments"), as written
	// ("/api/v1/verify-payment/{trxId}"); empty when the heading is no route.
	Method, Path string
	// Value is the block decoded (numbers as json.Number). A fragment ("key": value) is
	// decoded as the object {"key": value}.
	Value any
	// Fragment says whether the block was a fragment.
	Fragment bool
}

var routeHeading = regexp.MustCompile(`^#{2,}\s+(GET|POST|PUT|PATCH|DELETE)\s+(/\S+)\s*$`)

// JSONExamples returns the document's JSON blocks, decoded, with their sections.
func JSONExamples(d *Doc) ([]JSONExample, error) {
	var out []JSONExample
	for _, b := range d.BlocksOf("json") {
		ex := JSONExample{Block: b}
		for i := b.Line - 2; i >= 0; i-- {
			if d.fenced[i] || !strings.HasPrefix(d.Lines[i], "#") {
				continue
			}
			ex.Section = strings.TrimSpace(strings.TrimLeft(d.Lines[i], "#"))
			if m := routeHeading.FindStringSubmatch(d.Lines[i]); m != nil {
				ex.Method, ex.Path = m[1], m[2]
			}
			break
		}
		text := strings.TrimSpace(b.Body)
		if strings.HasPrefix(text, `"`) {
			text, ex.Fragment = "{"+text+"}", true
		}
		v, err := DecodeJSON([]byte(text))
		if err != nil {
			return nil, fmt.Errorf("%s: the JSON block is not JSON: %w", b.Where(), err)
		}
		ex.Value = v
		out = append(out, ex)
	}
	return out, nil
}

// DecodeJSON decodes one JSON value, numbers as json.Number.
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// Elided says whether a key or a string stands for what a document leaves out ("…", "...").
func Elided(s string) bool { return s == "…" || s == "..." }

// JSONType is the JSON type of a decoded value: object, array, string, number, boolean, null.
func JSONType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// Shape maps each field path of a JSON value ("data.balances[].currency") to the types it has;
// elided keys are left out.
type Shape map[string]map[string]bool

// Add records v's fields at prefix.
func (s Shape) Add(prefix string, v any) {
	t := JSONType(v)
	if prefix != "" {
		if s[prefix] == nil {
			s[prefix] = map[string]bool{}
		}
		s[prefix][t] = true
		if str, ok := v.(string); ok {
			if k := StringKind(str); k != "" {
				s[prefix]["string:"+k] = true
			}
		}
	}
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if Elided(k) {
				continue
			}
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			s.Add(p, x)
		}
	case []any:
		for _, x := range v {
			s.Add(prefix+"[]", x)
		}
	}
}

var (
	timestampZ      = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$`)
	timestampOffset = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d$`)
	prefixedID      = regexp.MustCompile(`^([a-z]{2,4}[_-])([a-z0-9]{8,})$`)
	uuid            = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	base32Chars     = regexp.MustCompile(`^[a-z2-7]+$`)
	hexChars        = regexp.MustCompile(`^[0-9a-f]+$`)
)

// StringKind names the form of a string a document and a server must agree on: a timestamp
// with Z or with an offset (and its fraction's digits), a UUID, or a prefixed id with its
// length and alphabet ("evt_ 24 base32"); "" for other strings.
func StringKind(s string) string {
	frac := func() int {
		_, after, ok := strings.Cut(s, ".")
		if !ok {
			return 0
		}
		n := 0
		for n < len(after) && after[n] >= '0' && after[n] <= '9' {
			n++
		}
		return n
	}
	switch {
	case timestampZ.MatchString(s):
		return fmt.Sprintf("timestamp with %d fraction digits and Z", frac())
	case timestampOffset.MatchString(s):
		return fmt.Sprintf("timestamp with %d fraction digits and an offset", frac())
	case uuid.MatchString(s):
		return "uuid"
	}
	if m := prefixedID.FindStringSubmatch(s); m != nil {
		alphabet := "alphanumeric"
		switch {
		case base32Chars.MatchString(m[2]):
			alphabet = "base32"
		case hexChars.MatchString(m[2]):
			alphabet = "hex"
		}
		return fmt.Sprintf("id %s and %d %s characters", m[1], len(m[2]), alphabet)
	}
	return ""
}

// ShapeOf is the shape of one value.
func ShapeOf(v any) Shape {
	s := Shape{}
	s.Add("", v)
	return s
}

// Paths returns the shape's paths, sorted.
func (s Shape) Paths() []string {
	out := make([]string, 0, len(s))
	for p := range s {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Mismatch is a field a document shows with another type than real answers have.
type Mismatch struct {
	Path      string
	Doc, Real string
}

// CompareShapes compares a document's example with the shape of real answers: each field the
// example shows that the answers have must have one of their types (null on either side is a
// value not there yet, not a type: a pending payment's null fee is a number later), and a string
// of a StringKind must have a kind the answers' strings have. It returns
// the mismatches and the example's fields no answer had.
func CompareShapes(example, real Shape) (mismatches []Mismatch, unseen []string) {
	for _, p := range example.Paths() {
		got, ok := real[p]
		if !ok {
			unseen = append(unseen, p)
			continue
		}
		if got["null"] {
			continue
		}
		for t := range example[p] {
			if t != "null" && !got[t] {
				mismatches = append(mismatches, Mismatch{Path: p, Doc: t, Real: strings.Join(keys(got), " | ")})
			}
		}
	}
	return mismatches, unseen
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// RouteMatches says whether a route template as a document writes it ("/api/v1/verify-payment/{trxId}")
// or as the OpenAPI document writes it names the same route as template or a real path: the
// segments are equal, a {parameter} matching any one segment.
func RouteMatches(template, path string) bool {
	path, _, _ = strings.Cut(path, "?")
	a, b := strings.Split(strings.Trim(template, "/"), "/"), strings.Split(strings.Trim(path, "/"), "/")
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		pa, pb := strings.HasPrefix(a[i], "{"), strings.HasPrefix(b[i], "{")
		if !pa && !pb && a[i] != b[i] {
			return false
		}
	}
	return true
}

// BestRoute picks, among route templates, the one path names (a real path or a template): of
// those that match, the one with the most literal segments equal (/api/v1/payouts/preview is
// not /api/v1/payouts/{id}). It returns "" when none matches.
func BestRoute(templates []string, path string) string {
	best, bestScore := "", -1
	sorted := append([]string(nil), templates...)
	sort.Strings(sorted)
	p, _, _ := strings.Cut(path, "?")
	ps := strings.Split(strings.Trim(p, "/"), "/")
	for _, t := range sorted {
		if !RouteMatches(t, p) {
			continue
		}
		score := 0
		for i, s := range strings.Split(strings.Trim(t, "/"), "/") {
			if s == ps[i] {
				score++
			}
		}
		if score > bestScore {
			best, bestScore = t, score
		}
	}
	return best
}
