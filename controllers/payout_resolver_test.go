// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
)

var _ = Describe("The payout resolver role", func() {
	It("lets its holder annotate payouts, and nothing more", func() {
		By("being shipped with the RBAC configuration")
		kustomization, err := os.ReadFile(filepath.Join("..", "config", "rbac", "kustomization.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(kustomization)).To(ContainSubstring("- payout_resolver_role.yaml"))
		raw, err := os.ReadFile(filepath.Join("..", "config", "rbac", "payout_resolver_role.yaml"))
		Expect(err).NotTo(HaveOccurred())
		role := &rbacv1.ClusterRole{}
		Expect(yaml.UnmarshalStrict(raw, role)).To(Succeed())
		Expect(role.Name).To(Equal("paygate-payout-resolver"))
		Expect(role.Labels).NotTo(HaveKey(HavePrefix("rbac.authorization.k8s.io/aggregate-to-")), "never aggregated into the built-in roles")

		By("binding it to an operator, as docs/payouts.md shows")
		Expect(k8s.Create(ctx, role)).To(Succeed())
		deleteAfter(role)
		user := uniqueName("payout-resolver")
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}
		Expect(k8s.Create(ctx, binding)).To(Succeed())
		deleteAfter(binding)
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		operator, err := client.New(cfg, client.Options{Scheme: kube.Scheme()})
		Expect(err).NotTo(HaveOccurred())

		// A payout no controller acts on: its merchant does not exist.
		ns := newNamespace()
		p := &paygatev1.Payout{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "5f0c1d2e-3a4b-4c5d-8e6f-708192a3b4c5",
				Labels: map[string]string{paygatev1.LabelMerchant: "nobody", paygatev1.LabelEnvironment: "production"}},
			Spec: paygatev1.PayoutSpec{MerchantRef: paygatev1.MerchantReference{Name: "nobody"}, Environment: paygatev1.EnvironmentProduction,
				Amount: "1000.00", Fee: "10.00", PayableAmount: "990.00", Currency: "TZS", Destination: settlementNumber, Gateway: "mpesa-tz",
				CreatedAt: metav1.NewMicroTime(clock.Now())},
		}
		Expect(k8s.Create(ctx, p)).To(Succeed())

		By("reading and annotating payouts")
		// RBAC takes a moment to see a new binding.
		Eventually(func(g Gomega) {
			var list paygatev1.PayoutList
			g.Expect(operator.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			cur := &paygatev1.Payout{}
			g.Expect(operator.Get(ctx, client.ObjectKeyFromObject(p), cur)).To(Succeed())
			cur.Annotations = map[string]string{paygatev1.AnnotationResolvePayout: "failed"}
			g.Expect(operator.Update(ctx, cur)).To(Succeed())
		}).Should(Succeed())
		cur := &paygatev1.Payout{}
		Expect(operator.Get(ctx, client.ObjectKeyFromObject(p), cur)).To(Succeed())
		Expect(operator.Patch(ctx, cur, client.RawPatch("application/merge-patch+json",
			[]byte(`{"metadata":{"annotations":{"paygate.dev/resolve-payout":"success"}}}`)))).To(Succeed())

		By("and nothing else: not the status, not creating or deleting payouts, not other resources")
		cur.Status.Phase = paygatev1.PayoutSuccess
		Expect(apierrors.IsForbidden(operator.Status().Update(ctx, cur))).To(BeTrue(), "status")
		other := p.DeepCopy()
		other.Name, other.ResourceVersion = "6f0c1d2e-3a4b-4c5d-8e6f-708192a3b4c5", ""
		Expect(apierrors.IsForbidden(operator.Create(ctx, other))).To(BeTrue(), "create")
		Expect(apierrors.IsForbidden(operator.Delete(ctx, cur))).To(BeTrue(), "delete")
		Expect(apierrors.IsForbidden(operator.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nobody-production"}, &paygatev1.Balance{}))).To(BeTrue(), "balances")
		Expect(apierrors.IsForbidden(operator.List(ctx, &paygatev1.PaymentList{}, client.InNamespace(ns)))).To(BeTrue(), "payments")
		Expect(apierrors.IsForbidden(operator.List(ctx, &paygatev1.MerchantList{}, client.InNamespace(ns)))).To(BeTrue(), "merchants")
	})
})
