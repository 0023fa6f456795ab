// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// maxBodyBytes bounds every request body; a larger one is a validation error.
const maxBodyBytes = 64 << 10

// readBody reads the raw body (the signature covers it byte for byte), bounded.
func readBody(r *http.Request) ([]byte, *APIError) {
	if r.Body == nil || r.Body == http.NoBody { // what the server gives a request without a body
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, &APIError{Status: http.StatusBadRequest, Label: LabelBadRequest, Message: "The request body could not be read."}
	}
	if len(body) > maxBodyBytes {
		return nil, validationError(map[string][]string{"body": {fmt.Sprintf("The request body must be at most %d bytes.", maxBodyBytes)}})
	}
	return body, nil
}

// fields is a JSON object body, field by field, still raw. JSON null counts as absent, as
// existing clients send null for the optional fields they leave out; fields Paygate does not know
// are accepted and ignored.
type fields map[string]json.RawMessage

// decodeObject parses body as one JSON object.
func decodeObject(body []byte) (fields, *APIError) {
	if len(bytes.TrimSpace(body)) == 0 {
		return fields{}, nil
	}
	if !utf8.Valid(body) {
		return nil, validationError(map[string][]string{"body": {"The request body must be UTF-8 JSON."}})
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var f fields
	if err := dec.Decode(&f); err != nil || f == nil {
		return nil, validationError(map[string][]string{"body": {"The request body must be a JSON object."}})
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, validationError(map[string][]string{"body": {"The request body must hold exactly one JSON object."}})
	}
	for k, v := range f {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(f, k)
		}
	}
	return f, nil
}

// validation collects messages per field.
type validation map[string][]string

func (v validation) add(field, format string, args ...any) {
	v[field] = append(v[field], fmt.Sprintf(format, args...))
}

func (v validation) has(field string) bool { return len(v[field]) > 0 }

// str reads an optional string field. Present is false when absent or null.
func (f fields) str(v validation, name string) (string, bool) {
	raw, ok := f[name]
	if !ok {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		v.add(name, "The %s field must be a string.", name)
		return "", false
	}
	return s, true
}

// requiredStr reads a string field that must be present and not blank.
func (f fields) requiredStr(v validation, name string) string {
	s, ok := f.str(v, name)
	if !ok && !v.has(name) {
		v.add(name, "The %s field is required.", name)
	} else if ok && strings.TrimSpace(s) == "" {
		v.add(name, "The %s field is required.", name)
	}
	return s
}

// stringList reads a field that is a comma-separated string or an array of strings.
func (f fields) stringList(v validation, name string) []string {
	raw, ok := f[name]
	if !ok {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		var out []string
		for _, part := range strings.Split(s, ",") {
			if p := strings.TrimSpace(part); p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		v.add(name, "The %s field must be a comma-separated string or an array of strings.", name)
		return nil
	}
	var out []string
	for _, p := range list {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func hasControlChars(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}
