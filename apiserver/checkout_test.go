package apiserver

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/index"
	"github.com/paygate/paygate/internal/kube"
)

// TestCheckoutPageReadsPastAStaleCacheAfterPay: the page the customer lands on after "Pay" must
// show the waiting state even when this replica's cache has not seen the push request yet; a
// plain visit keeps answering from the cache.
func TestCheckoutPageReadsPastAStaleCacheAfterPay(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	trx := "trx-" + strings.Repeat("a", 24)
	pending := &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: trx},
		Spec: paygatev1.PaymentSpec{
			MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			Amount: "15000", Currency: "TZS", ExpiresAt: metav1.NewTime(now.Add(30 * time.Minute)),
		},
	}
	pushed := pending.DeepCopy()
	pushed.Spec.PushRequest = &paygatev1.PushRequest{Sequence: 1, Phone: "+255712345678", RequestedAt: metav1.NewTime(now)}

	build := func(p *paygatev1.Payment, field string) client.Client {
		return fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(p).
			WithIndex(&paygatev1.Payment{}, field, func(o client.Object) []string { return []string{o.GetName()} }).Build()
	}
	s := New(Options{
		Cache: build(pending, index.PaymentName), APIReader: build(pushed, "metadata.name"),
		CheckoutKey: make([]byte, 32), Clock: func() time.Time { return now },
	})
	expires := strconv.FormatInt(pending.Spec.ExpiresAt.Unix(), 10)
	link := "/checkout/" + trx + "?expires=" + expires + "&signature=" + s.checkoutSignature(trx, expires)

	for _, tc := range []struct {
		name, query, want string
	}{
		{"a visit answers from the cache", "", `name="phone"`},
		{"the page after Pay reads past a stale cache", "&pushed=1", "data-status-url="},
		{"a bad pushed parameter is ignored", "&pushed=x", `name="phone"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, link+tc.query, nil))
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), tc.want) {
				t.Fatalf("GET %s: %d, want a page with %s:\n%s", tc.query, rec.Code, tc.want, rec.Body)
			}
		})
	}
}
