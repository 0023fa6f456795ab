// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"fmt"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

var _ = Describe("Archived records", func() {
	It("are served over HTTP exactly as they were live, and their ref_trx stays taken", func() {
		By("starting PostgreSQL, migrating the archive, and an apiserver replica that reads through it")
		store, replicaURL := archiveReplica("apiserver-archive")

		ns := newNamespace()
		createGateway("TZS")
		duka := createMerchant(ns, "duka")
		c := clientAt(replicaURL, duka.merchant, paygatev1.EnvironmentSandbox)

		By("settling two sandbox push payments (one succeeds, one fails) and leaving one pending")
		ref := func(s string) string { return fmt.Sprintf("archive-%d-%s", GinkgoParallelProcess(), s) }
		var trxIDs []string
		for _, p := range []struct{ ref, mode, phone string }{
			{ref("paid"), "push", "+255712345678"}, {ref("failed"), "push", "+255711000001"}, {ref("pending"), "hosted", ""},
		} {
			created, err := c.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "10000", CurrencyCode: "TZS",
				RefTrx: p.ref, PaymentMode: p.mode, CustomerPhone: p.phone}, "")
			Expect(err).NotTo(HaveOccurred())
			trxIDs = append(trxIDs, created.TrxID)
		}
		for _, trx := range trxIDs[:2] {
			Eventually(func(g Gomega) {
				var p paygatev1.Payment
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: trx}, &p)).To(Succeed())
				g.Expect(p.Terminal()).To(BeTrue())
			}).Should(Succeed())
		}

		targets := []string{"/api/v1/payments", "/api/v1/payments?limit=1&offset=0", "/api/v1/payments?limit=1&offset=1",
			"/api/v1/payments?limit=1&offset=2", "/api/v1/payments?status=success", "/api/v1/payments?merchant_ref=" + ref("failed")}
		for _, trx := range trxIDs {
			targets = append(targets, "/api/v1/payments/"+trx, "/api/v1/verify-payment/"+trx)
		}
		render := func() map[string]string {
			out := map[string]string{}
			for _, target := range targets {
				resp, err := c.Do(ctx, http.MethodGet, target, nil, nil)
				Expect(err).NotTo(HaveOccurred())
				out[target] = fmt.Sprintf("%d %s", resp.StatusCode, resp.Body)
			}
			return out
		}
		var before map[string]string
		Eventually(func(g Gomega) { // the replica's cache has the settlements, and the controllers are done with them
			before = render()
			g.Expect(before["/api/v1/payments?status=success"]).To(ContainSubstring(`"total":1`))
			g.Expect(before["/api/v1/payments/"+trxIDs[1]]).To(ContainSubstring(`"status":"failed"`))
			time.Sleep(time.Second)
			g.Expect(render()).To(Equal(before))
		}).Should(Succeed())

		By("archiving the settled payments as the archiver does: commit, then delete from etcd")
		settled := make([]paygatev1.Payment, 2)
		for i, trx := range trxIDs[:2] {
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: trx}, &settled[i])).To(Succeed())
		}
		_, err := store.ArchivePayments(ctx, settled)
		Expect(err).NotTo(HaveOccurred())
		sameAsBefore := func(why string) {
			GinkgoHelper()
			after := render()
			for target, want := range before {
				Expect(after[target]).To(Equal(want), "%s: GET %s", why, target)
			}
		}
		sameAsBefore("archived, not deleted yet: counted once")
		for i := range settled {
			uid, rv := settled[i].UID, settled[i].ResourceVersion
			Expect(k8s.Delete(ctx, &settled[i], client.Preconditions{UID: &uid, ResourceVersion: &rv})).To(Succeed())
		}
		Eventually(func(g Gomega) { // the suite's apiserver, without the archive, no longer has them
			_, err := clientFor(duka.merchant, paygatev1.EnvironmentSandbox).GetPayment(ctx, trxIDs[0])
			g.Expect(err).To(HaveOccurred())
		}).Should(Succeed())
		sameAsBefore("deleted from etcd: served from the archive")

		By("refusing the archived payment's ref_trx, creating nothing")
		_, err = c.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "10000", CurrencyCode: "TZS", RefTrx: ref("paid")}, "")
		Expect(apiError(err).Label).To(Equal("DUPLICATE_REFERENCE"))
		Consistently(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: trxIDs[0]}, &paygatev1.Payment{}))
		}, 2*time.Second).Should(BeTrue())
		_, err = c.PushPayment(ctx, trxIDs[0], "+255712345678")
		Expect(apiError(err).Label).To(Equal("PAYMENT_NOT_PENDING"))
	})
})
