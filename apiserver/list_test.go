// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// TestWriteItemsRendersCopies: list handlers hand writeItems the cache's own objects (listOwn), so
// whatever a render does to the object it is given must not reach them.
func TestWriteItemsRendersCopies(t *testing.T) {
	held := []paygatev1.Payout{
		{ObjectMeta: metav1.ObjectMeta{Name: "po-1", Labels: map[string]string{"k": "v"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "po-2", Labels: map[string]string{"k": "v"}}},
	}
	render := func(p *paygatev1.Payout) (string, error) {
		name := p.Name
		p.Name = "changed"
		p.Labels["k"] = "changed"
		return name, nil
	}
	rec := httptest.NewRecorder()
	writeItems(&Server{}, rec, "payout", held, 20, 0, len(held), render)

	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", rec.Code, rec.Body)
	}
	var body struct {
		Data       []string       `json:"data"`
		Pagination map[string]int `json:"pagination"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("decoding %s: %v", rec.Body, err)
	}
	if len(body.Data) != 2 || body.Data[0] != "po-1" || body.Data[1] != "po-2" || body.Pagination["total"] != 2 {
		t.Errorf("answer %s, want the two payouts' names and total 2", rec.Body)
	}
	for _, p := range held {
		if p.Name == "changed" || p.Labels["k"] != "v" {
			t.Errorf("the held payout became %s %v: a render reached the cache's object", p.Name, p.Labels)
		}
	}
}
