// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
)

// Every other spec of the suite runs the manager and the apiserver as the chart's service
// accounts (suite_test.go): the payment, payout, billing and webhook flows work with exactly the
// chart's roles. These specs show the roles stop there.
var _ = Describe("Least privilege (the chart's roles)", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	as := func(cfg func() client.Client) client.Client { return cfg() }
	apiserverClient := func() client.Client {
		c, err := client.New(identities.APIServer, client.Options{Scheme: kube.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		return c
	}
	managerClient := func() client.Client {
		c, err := client.New(identities.Manager, client.Options{Scheme: kube.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		return c
	}
	forbidden := func(err error) {
		GinkgoHelper()
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
	}

	It("keeps the apiserver from changing merchants, gateways, balances or secrets, and from deleting money", func() {
		m := createMerchant(ns, "duka")
		c := as(apiserverClient)
		merchant := &paygatev1.Merchant{}
		Expect(c.Get(ctx, client.ObjectKeyFromObject(m.merchant), merchant)).To(Succeed(), "reading merchants is its job")
		merchant.Spec.DisplayName = "Taken over"
		forbidden(c.Update(ctx, merchant))
		forbidden(c.Delete(ctx, merchant))
		forbidden(c.Create(ctx, testGateway()))
		forbidden(c.Delete(ctx, &paygatev1.GatewaySelection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "duka-gateways"}}))
		forbidden(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "planted"}}))
		var payments paygatev1.PaymentList
		Expect(c.List(ctx, &payments, client.InNamespace(ns))).To(Succeed())
		for i := range payments.Items {
			forbidden(c.Delete(ctx, &payments.Items[i]))
		}
		forbidden(c.DeleteAllOf(ctx, &paygatev1.Payment{}, client.InNamespace(ns)))
		forbidden(c.Create(ctx, &paygatev1.Balance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged"}}))
		forbidden(c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)))
	})

	It("keeps the manager from cluster administration and from reading what it does not use", func() {
		c := as(managerClient)
		forbidden(c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		forbidden(c.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "escalate"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "paygate-manager", Namespace: "paygate-system"}}}))
		forbidden(c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)))
		forbidden(c.List(ctx, &corev1.PodList{}, client.InNamespace(ns)))
		forbidden(c.Create(ctx, &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged"}}))
	})
})

func testGateway() *paygatev1.Gateway {
	g := &paygatev1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("forged")}}
	g.Spec.DisplayName, g.Spec.Currency = "Forged", "TZS"
	return g
}
