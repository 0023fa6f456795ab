// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package config embeds the generated CRDs and the demo configuration, so that `paygate dev`
// installs exactly what `make manifests` generated.
package config

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
)

//go:embed crd/bases/*.yaml
var crds embed.FS

//go:embed samples/*.yaml
var samples embed.FS

// CRDs returns the CRD manifests, one YAML document per file, in name order.
func CRDs() ([][]byte, error) { return readAll(crds, "crd/bases") }

// Samples returns the demo configuration manifests (gateways, merchants, a selection), in the
// order they should be applied.
func Samples() ([][]byte, error) { return readAll(samples, "samples") }

func readAll(fsys embed.FS, dir string) ([][]byte, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("reading embedded %s: %w", dir, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	out := make([][]byte, 0, len(entries))
	for _, e := range entries {
		b, err := fs.ReadFile(fsys, dir+"/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("reading embedded %s/%s: %w", dir, e.Name(), err)
		}
		out = append(out, b)
	}
	return out, nil
}
