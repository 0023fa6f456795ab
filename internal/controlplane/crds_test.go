// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controlplane

import (
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestCRDsAreExplained pins the kubectl experience of every kind: `kubectl get paygate` lists it
// (the category), it has printer columns and (but for the internal IDClaim) a short name, and
// `kubectl explain` has a description for every field.
func TestCRDsAreExplained(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) < 12 {
		t.Fatalf("%d CRDs, want every kind", len(crds))
	}
	for _, crd := range crds {
		kind := crd.Spec.Names.Kind
		if !slices.Contains(crd.Spec.Names.Categories, "paygate") {
			t.Errorf("%s is not in the paygate category", kind)
		}
		if len(crd.Spec.Names.ShortNames) == 0 && kind != "IDClaim" {
			t.Errorf("%s has no short name", kind)
		}
		for _, v := range crd.Spec.Versions {
			if len(v.AdditionalPrinterColumns) < 2 {
				t.Errorf("%s %s: %d printer columns", kind, v.Name, len(v.AdditionalPrinterColumns))
			}
			var walk func(path string, s *apiextensionsv1.JSONSchemaProps)
			walk = func(path string, s *apiextensionsv1.JSONSchemaProps) {
				for name, p := range s.Properties {
					if name == "apiVersion" || name == "kind" || name == "metadata" {
						continue
					}
					if p.Description == "" {
						t.Errorf("%s %s.%s has no description for kubectl explain", kind, path, name)
					}
					walk(path+"."+name, &p)
				}
				if s.Items != nil && s.Items.Schema != nil {
					walk(path+"[]", s.Items.Schema)
				}
			}
			walk("", v.Schema.OpenAPIV3Schema)
		}
	}
}
