// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/paygate/paygate/test/docs/markdown"
)

// loadOpenAPI reads apiserver/openapi.json, the document the apiserver serves.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "apiserver", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		t.Fatalf("loading apiserver/openapi.json: %v", err)
	}
	return doc
}

// TestDocsJSONMatchesOpenAPI checks the JSON examples of docs/api.md against the OpenAPI
// document, field by field: under a route's heading ("### POST /api/v1/payouts") an example is
// that route's success answer; an example with an "error" field is the Error schema; a fragment
// ("late_settlement": {…}) is the property of that name of the records; a webhook's envelope
// has no schema, but its data is the record of its type (payout.completed: Payout). Every
// field an example shows must be a property of its schema with the property's type, enum and
// pattern; an example that leaves nothing out ("…": "…") must show every required field.
// The same examples are compared with the server's real answers in the end-to-end suite.
func TestDocsJSONMatchesOpenAPI(t *testing.T) {
	spec := loadOpenAPI(t)
	api, err := markdown.Read(repoRoot(t), "docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	examples, err := markdown.JSONExamples(api)
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) < 10 {
		t.Fatalf("only %d JSON examples in docs/api.md: is the reader broken?", len(examples))
	}
	for _, ex := range examples {
		obj, _ := ex.Value.(map[string]any)
		var checks []schemaCheck
		switch {
		case obj != nil && obj["error"] != nil:
			checks = []schemaCheck{{"Error", componentSchema(spec, "Error"), ex.Value}}
		case ex.Method != "":
			ref, err := successSchema(spec, ex.Method, ex.Path)
			if err != nil {
				t.Errorf("%s: %v", ex.Block.Where(), err)
				continue
			}
			checks = []schemaCheck{{ex.Method + " " + ex.Path, ref, ex.Value}}
		case ex.Fragment:
			for k, v := range obj {
				props := propertiesNamed(spec, k)
				if len(props) == 0 {
					t.Errorf("%s: no schema of the OpenAPI document has a property %q", ex.Block.Where(), k)
				}
				for _, p := range props {
					checks = append(checks, schemaCheck{p.name, p.ref, v})
				}
			}
		case obj != nil && obj["api_version"] != nil && obj["data"] != nil:
			// A webhook: its data is the record its type names, when the document has one.
			typ, _ := obj["type"].(string)
			name := typ
			if i := strings.Index(name, "."); i > 0 {
				name = name[:i]
			}
			if name == "" {
				t.Errorf("%s: a webhook example without a type", ex.Block.Where())
				continue
			}
			r := []rune(name)
			r[0] = unicode.ToUpper(r[0])
			if ref := componentSchema(spec, string(r)); ref != nil {
				checks = []schemaCheck{{string(r) + " (the data of " + typ + ")", ref, obj["data"]}}
			}
		default:
			t.Errorf("%s: a JSON example under %q that is neither a route's answer, nor an error, nor a fragment of a record, nor a webhook", ex.Block.Where(), ex.Section)
			continue
		}
		for _, c := range checks {
			if c.ref == nil {
				t.Errorf("%s: the OpenAPI document has no schema %s", ex.Block.Where(), c.name)
				continue
			}
			for _, e := range checkSchema(c.value, c.ref, "") {
				t.Errorf("%s: against %s: %s", ex.Block.Where(), c.name, e)
			}
		}
	}
}

type schemaCheck struct {
	name  string
	ref   *openapi3.SchemaRef
	value any
}

func componentSchema(spec *openapi3.T, name string) *openapi3.SchemaRef {
	return spec.Components.Schemas[name]
}

// successSchema is the JSON schema of the route's success answer (200, else 202, else the first
// 2xx).
func successSchema(spec *openapi3.T, method, path string) (*openapi3.SchemaRef, error) {
	tmpl := markdown.BestRoute(spec.Paths.Keys(), path)
	if item := spec.Paths.Value(tmpl); tmpl != "" && item != nil {
		op := item.GetOperation(method)
		if op == nil {
			return nil, fmt.Errorf("the OpenAPI document has no %s %s", method, tmpl)
		}
		codes := []string{"200", "202"}
		for c := range op.Responses.Map() {
			if strings.HasPrefix(c, "2") {
				codes = append(codes, c)
			}
		}
		for _, c := range codes {
			if r := op.Responses.Value(c); r != nil && r.Value != nil {
				if mt := r.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
					return mt.Schema, nil
				}
			}
		}
		return nil, fmt.Errorf("%s %s has no JSON success answer in the OpenAPI document", method, tmpl)
	}
	return nil, fmt.Errorf("the OpenAPI document has no route %s", path)
}

type namedRef struct {
	name string
	ref  *openapi3.SchemaRef
}

// propertiesNamed are the schemas of the component schemas' properties called name.
func propertiesNamed(spec *openapi3.T, name string) []namedRef {
	var out []namedRef
	names := make([]string, 0, len(spec.Components.Schemas))
	for n := range spec.Components.Schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if p := flatten(spec.Components.Schemas[n]).props[name]; p != nil {
			out = append(out, namedRef{n + "." + name, p})
		}
	}
	return out
}

// flat is a schema with its allOf parts merged.
type flat struct {
	types      map[string]bool
	nullable   bool
	props      map[string]*openapi3.SchemaRef
	required   map[string]bool
	additional bool // other properties are allowed
	items      *openapi3.SchemaRef
	enum       []any
	pattern    string
	alts       openapi3.SchemaRefs // oneOf and anyOf: one must match
}

func flatten(ref *openapi3.SchemaRef) flat {
	f := flat{types: map[string]bool{}, props: map[string]*openapi3.SchemaRef{}, required: map[string]bool{}}
	var add func(s *openapi3.Schema)
	add = func(s *openapi3.Schema) {
		if s == nil {
			return
		}
		if s.Type != nil {
			for _, t := range s.Type.Slice() {
				f.types[t] = true
			}
		}
		f.nullable = f.nullable || s.Nullable || (s.Type != nil && s.Type.IncludesNull())
		for k, p := range s.Properties {
			f.props[k] = p
		}
		for _, r := range s.Required {
			f.required[r] = true
		}
		if ap := s.AdditionalProperties; (ap.Has != nil && *ap.Has) || ap.Schema != nil {
			f.additional = true
		}
		if s.Items != nil {
			f.items = s.Items
		}
		if s.Enum != nil {
			f.enum = s.Enum
		}
		if s.Pattern != "" {
			f.pattern = s.Pattern
		}
		f.alts = append(f.alts, s.OneOf...)
		f.alts = append(f.alts, s.AnyOf...)
		for _, a := range s.AllOf {
			add(a.Value)
		}
	}
	if ref != nil {
		add(ref.Value)
	}
	return f
}

var integral = regexp.MustCompile(`^-?\d+$`)

// checkSchema reports where v does not fit the schema: types, properties (an object may show
// only declared properties, and all required ones unless it elides some), enums and patterns.
func checkSchema(v any, ref *openapi3.SchemaRef, path string) []string {
	f := flatten(ref)
	at := path
	if at == "" {
		at = "the top level"
	}
	if len(f.alts) > 0 {
		var all []string
		for _, a := range f.alts {
			errs := checkSchema(v, a, path)
			if len(errs) == 0 {
				all = nil
				break
			}
			all = append(all, errs...)
		}
		if all != nil {
			return []string{fmt.Sprintf("%s fits none of its schema's alternatives: %s", at, strings.Join(all, "; "))}
		}
	}
	typ := markdown.JSONType(v)
	if typ == "null" {
		if !f.nullable && len(f.types) > 0 {
			return []string{fmt.Sprintf("%s is null, which the schema does not allow", at)}
		}
		return nil
	}
	if len(f.types) > 0 && !f.types[typ] {
		ok := false
		if typ == "number" && f.types["integer"] {
			n, _ := v.(json.Number)
			ok = integral.MatchString(n.String())
		}
		if !ok {
			return []string{fmt.Sprintf("%s is %s, the schema says %s", at, typ, strings.Join(slices.Sorted(maps.Keys(f.types)), " or "))}
		}
	}
	var errs []string
	switch v := v.(type) {
	case map[string]any:
		partial := false
		for k := range v {
			partial = partial || markdown.Elided(k)
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if markdown.Elided(k) {
				continue
			}
			p := join(path, k)
			prop := f.props[k]
			if prop == nil {
				if !f.additional {
					errs = append(errs, fmt.Sprintf("%s is not a field of the schema", p))
				}
				continue
			}
			errs = append(errs, checkSchema(v[k], prop, p)...)
		}
		if !partial {
			for _, r := range slices.Sorted(maps.Keys(f.required)) {
				if _, ok := v[r]; !ok {
					errs = append(errs, fmt.Sprintf("%s leaves out the required field %s", at, join(path, r)))
				}
			}
		}
	case []any:
		if f.items != nil {
			for i, x := range v {
				errs = append(errs, checkSchema(x, f.items, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	case string:
		if strings.Contains(v, "…") || markdown.Elided(v) {
			return nil
		}
		if len(f.enum) > 0 && !contains(f.enum, v) {
			errs = append(errs, fmt.Sprintf("%s is %q, not one of %v", at, v, f.enum))
		}
		if f.pattern != "" {
			if re, err := regexp.Compile(f.pattern); err == nil && !re.MatchString(v) {
				errs = append(errs, fmt.Sprintf("%s is %q, which does not match %s", at, v, f.pattern))
			}
		}
	}
	return errs
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func contains(enum []any, s string) bool {
	for _, e := range enum {
		if e == s {
			return true
		}
	}
	return false
}
