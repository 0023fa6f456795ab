// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

var _ = Describe("Idempotency keys", func() {
	It("are deleted once their 24 hours are over, and kept before", func() {
		ns := newNamespace()
		key := func(name string, expires time.Time) *paygatev1.IdempotencyKey {
			k := &paygatev1.IdempotencyKey{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: paygatev1.IdempotencyKeySpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: "sandbox",
					RequestHash: "0000000000000000000000000000000000000000000000000000000000000000", ExpiresAt: metav1.NewTime(expires)},
			}
			Expect(k8s.Create(ctx, k)).To(Succeed())
			return k
		}
		expired := key("idem-expired", clock.Now().Add(-time.Minute))
		live := key("idem-live", clock.Now().Add(24*time.Hour))
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(expired), &paygatev1.IdempotencyKey{}))
		}).Should(BeTrue())
		Consistently(func() error {
			return k8s.Get(ctx, client.ObjectKeyFromObject(live), &paygatev1.IdempotencyKey{})
		}, "1s").Should(Succeed())
	})
})
