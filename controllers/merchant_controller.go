// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/eligibility"
	"github.com/paygate/paygate/internal/index"
)

// Merchant condition reasons (docs/configuration.md, Merchant). A failed step sets its
// condition's reason to SecretNotOwned when someone else's Secret is in the way, else to the
// step's own failure reason; Ready's reason then comes from failureReason.
const (
	ReasonCredentialsIssued  = "CredentialsIssued"
	ReasonCredentialsFailed  = "CredentialsFailed"
	ReasonCredentialsRotated = "CredentialsRotated"
	// ReasonCredentialsOverlapEnded: the credentials a rotation replaced stopped working.
	ReasonCredentialsOverlapEnded = "CredentialsOverlapEnded"
	// Webhook signing secret rotation in two steps.
	ReasonWebhookSecretPrepared  = "WebhookSecretPrepared"
	ReasonWebhookSecretActivated = "WebhookSecretActivated"
	ReasonNoPendingWebhookSecret = "NoPendingWebhookSecret"
	ReasonWebhookSecretIssued    = "WebhookSecretIssued"
	ReasonWebhookSecretFailed    = "WebhookSecretFailed"
	ReasonProductionEnabled      = "ProductionEnabled"
	ReasonProductionDisabled     = "ProductionDisabled"
	ReasonSelectionValid         = "SelectionValid"
	ReasonSelectionInvalid       = "SelectionInvalid"
	ReasonMultipleSelections     = "MultipleSelections"
	ReasonMerchantReady          = "MerchantReady"
	ReasonMerchantNotReady       = "MerchantNotReady"
	ReasonBusinessNotApproved    = "BusinessNotApproved"
	merchantControllerName       = "merchant-controller"
)

// MerchantReconciler issues a merchant's credentials (sandbox always, production once approved),
// its webhook signing secret and integer id, and reports which gateways its checkout can show.
type MerchantReconciler struct {
	client.Client
	// APIReader reads live, for the read-your-writes cases the cache can't answer yet.
	APIReader client.Reader
	Recorder  events.EventRecorder
	IDs       *IDAllocator
	// Clock is the time source of rotation overlaps (default the real clock).
	Clock clock.PassiveClock
}

func (r *MerchantReconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// merchantScope is what one reconcile pass of a Merchant works on.
type merchantScope struct {
	merchant *paygatev1.Merchant
	gateways []paygatev1.Gateway
}

// +kubebuilder:rbac:groups=paygate.dev,resources=merchants,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=merchants/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=gateways,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=gatewayselections,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=idclaims,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one Merchant's credentials, id and status in line with its spec.
func (r *MerchantReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	log := ctrl.LoggerFrom(ctx)
	merchant := &paygatev1.Merchant{}
	if err := r.Get(ctx, req.NamespacedName, merchant); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !merchant.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // Secrets go with their owner reference.
	}
	patch := newStatusPatch(r.Client, merchant, func(m *paygatev1.Merchant) any { return &m.Status })
	defer func() {
		summarizeMerchant(merchant, retErr)
		if err := patch.Patch(ctx, merchant); err != nil {
			retErr = errors.Join(retErr, client.IgnoreNotFound(fmt.Errorf("patching merchant status: %w", err)))
		}
	}()

	var gateways paygatev1.GatewayList
	if err := r.List(ctx, &gateways); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing gateways: %w", err)
	}
	s := &merchantScope{merchant: merchant, gateways: gateways.Items}
	log.V(1).Info("Reconciling merchant")
	// None of the steps needs another: a Secret that cannot be written does not hold back the
	// merchant's id, its other credentials or its checkout gateways.
	return runSteps(ctx, s, independent(
		r.assignID,
		r.issueSandboxCredentials,
		r.issueProductionCredentials,
		r.issueWebhookSigningSecret,
		r.resolveCheckoutGateways,
		r.reportUnsignedRequests,
	))
}

// Reasons of the UnsignedRequestsAccepted condition.
const (
	ReasonUnsignedRequestsOn = "UnsignedRequestsOn"
	ReasonSignaturesRequired = "SignaturesRequired"
)

// reportUnsignedRequests shows on the merchant whether its switch lets requests come unsigned
// (spec.unsignedRequests), so that nobody has to read the spec to know signatures are off.
func (r *MerchantReconciler) reportUnsignedRequests(_ context.Context, s *merchantScope) (ctrl.Result, error) {
	m := s.merchant
	if len(m.Spec.UnsignedRequests) == 0 {
		r.setCondition(m, paygatev1.ConditionUnsignedRequestsAccepted, metav1.ConditionFalse, ReasonSignaturesRequired,
			"Every request must be signed")
		return ctrl.Result{}, nil
	}
	envs := make([]string, 0, len(m.Spec.UnsignedRequests))
	for _, e := range m.Spec.UnsignedRequests {
		envs = append(envs, string(e))
	}
	slices.Sort(envs)
	msg := "Requests without a signature are accepted in " + strings.Join(envs, " and ")
	if m.Spec.AcceptsUnsigned(paygatev1.EnvironmentProduction) {
		msg += " (production only where the apiserver runs with --allow-unsigned-production)"
	}
	r.setCondition(m, paygatev1.ConditionUnsignedRequestsAccepted, metav1.ConditionTrue, ReasonUnsignedRequestsOn, msg)
	return ctrl.Result{}, nil
}

// summarizeMerchant sets the merchant's Ready condition and observedGeneration from its other
// conditions; reconcileErr is the pass's error.
func summarizeMerchant(m *paygatev1.Merchant, reconcileErr error) {
	ready := metav1.Condition{Type: paygatev1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonMerchantReady,
		Message: "Credentials issued and configuration valid", ObservedGeneration: m.Generation}
	var notReady []string
	for _, t := range []string{paygatev1.ConditionSandboxCredentialsIssued, paygatev1.ConditionWebhookSecretIssued} {
		if !meta.IsStatusConditionTrue(m.Status.Conditions, t) {
			notReady = append(notReady, t+" is not True")
		}
	}
	if meta.IsStatusConditionTrue(m.Status.Conditions, paygatev1.ConditionInvalidGatewaySelection) {
		notReady = append(notReady, "the gateway selection is invalid")
	}
	switch {
	case reconcileErr != nil:
		ready.Status = metav1.ConditionFalse
		ready.Reason, ready.Message = failureReason(reconcileErr)
	case len(notReady) > 0:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonMerchantNotReady, strings.Join(notReady, "; ")
	}
	meta.SetStatusCondition(&m.Status.Conditions, ready)
	if reconcileErr == nil {
		m.Status.ObservedGeneration = m.Generation
	}
}

// stepFailure is the reason and message of a failed step's condition: SecretNotOwned when
// someone else's Secret is in the way, else the step's own reason; never the error's text.
func stepFailure(err error, stepReason string) (reason, message string) {
	reason, message = failureReason(err)
	if reason != ReasonSecretNotOwned && reason != ReasonInvalidAnnotation {
		reason = stepReason
	}
	return reason, message
}

func (r *MerchantReconciler) assignID(ctx context.Context, s *merchantScope) (ctrl.Result, error) {
	id, err := r.IDs.Ensure(ctx, paygatev1.IDClaimMerchant, s.merchant)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("assigning merchant id: %w", err)
	}
	s.merchant.Status.ID = id
	return ctrl.Result{}, nil
}

func (r *MerchantReconciler) issueSandboxCredentials(ctx context.Context, s *merchantScope) (ctrl.Result, error) {
	m := s.merchant
	set, res, err := r.ensureCredentialSet(ctx, m, paygatev1.EnvironmentSandbox)
	if err != nil {
		reason, msg := stepFailure(err, ReasonCredentialsFailed)
		r.setCondition(m, paygatev1.ConditionSandboxCredentialsIssued, metav1.ConditionFalse, reason, msg)
		return ctrl.Result{}, fmt.Errorf("issuing sandbox credentials: %w", err)
	}
	m.Status.Sandbox = set
	r.setCondition(m, paygatev1.ConditionSandboxCredentialsIssued, metav1.ConditionTrue, ReasonCredentialsIssued,
		"Sandbox credentials are in Secret "+set.SecretName)
	return res, nil
}

func (r *MerchantReconciler) issueProductionCredentials(ctx context.Context, s *merchantScope) (ctrl.Result, error) {
	m := s.merchant
	if m.Spec.BusinessStatus != paygatev1.BusinessApproved {
		// Credentials issued during an earlier approval are kept (the apiserver refuses them while
		// the business is not approved), so a re-approval does not break the integration.
		set, err := r.existingCredentialSet(ctx, m, paygatev1.EnvironmentProduction)
		if err != nil {
			return ctrl.Result{}, err
		}
		m.Status.Production = set
		r.setProductionCondition(m, metav1.ConditionFalse, ReasonBusinessNotApproved,
			fmt.Sprintf("Production needs an approved business; businessStatus is %s", businessStatus(m)))
		return ctrl.Result{}, nil
	}
	set, res, err := r.ensureCredentialSet(ctx, m, paygatev1.EnvironmentProduction)
	if err != nil {
		reason, msg := stepFailure(err, ReasonCredentialsFailed)
		r.setProductionCondition(m, metav1.ConditionFalse, reason, msg)
		return ctrl.Result{}, fmt.Errorf("issuing production credentials: %w", err)
	}
	m.Status.Production = set
	r.setProductionCondition(m, metav1.ConditionTrue, ReasonProductionEnabled, "Production credentials are in Secret "+set.SecretName)
	return res, nil
}

// setProductionCondition sets ProductionEnabled and records an event when it flips.
func (r *MerchantReconciler) setProductionCondition(m *paygatev1.Merchant, status metav1.ConditionStatus, reason, msg string) {
	// Copy before setting: FindStatusCondition points into the slice that SetStatusCondition edits.
	var was metav1.ConditionStatus
	if c := meta.FindStatusCondition(m.Status.Conditions, paygatev1.ConditionProductionEnabled); c != nil {
		was = c.Status
	}
	r.setCondition(m, paygatev1.ConditionProductionEnabled, status, reason, msg)
	if was == status {
		return
	}
	if status == metav1.ConditionTrue {
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, ReasonProductionEnabled, "EnableProduction", "Production enabled for an approved business")
	} else if was != "" {
		r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, ReasonProductionDisabled, "DisableProduction", "%s", msg)
	}
}

func (r *MerchantReconciler) issueWebhookSigningSecret(ctx context.Context, s *merchantScope) (ctrl.Result, error) {
	m := s.merchant
	name, pending, err := r.ensureWebhookSigningSecret(ctx, m)
	if err != nil {
		reason, msg := stepFailure(err, ReasonWebhookSecretFailed)
		r.setCondition(m, paygatev1.ConditionWebhookSecretIssued, metav1.ConditionFalse, reason, msg)
		return ctrl.Result{}, fmt.Errorf("issuing webhook signing secret: %w", err)
	}
	m.Status.WebhookSigningSecretName, m.Status.WebhookSigningSecretPendingSince = name, pending
	msg := "The webhook signing secret is in Secret " + name
	if pending != nil {
		msg += "; a pending secret waits for " + paygatev1.AnnotationActivateWebhookSecret
	}
	r.setCondition(m, paygatev1.ConditionWebhookSecretIssued, metav1.ConditionTrue, ReasonWebhookSecretIssued, msg)
	return ctrl.Result{}, nil
}

// resolveCheckoutGateways reports, per currency, what hosted checkout can show, and flags a
// selection that names a gateway that cannot serve.
func (r *MerchantReconciler) resolveCheckoutGateways(ctx context.Context, s *merchantScope) (ctrl.Result, error) {
	m := s.merchant
	var selections paygatev1.GatewaySelectionList
	if err := r.List(ctx, &selections, client.InNamespace(m.Namespace), client.MatchingFields{index.SelectionMerchant: m.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing gateway selections: %w", err)
	}
	sel, problems := effectiveSelection(m, selections.Items, s.gateways)

	m.Status.CheckoutGateways = m.Status.CheckoutGateways[:0]
	for _, c := range m.Spec.Currencies {
		res := eligibility.ResolveGateways(m, sel, s.gateways, eligibility.Request{Currency: c})
		cg := paygatev1.CurrencyGateways{Currency: c, Gateways: []paygatev1.GatewayCode{}, Reason: res.Reason}
		for _, g := range res.Gateways {
			cg.Gateways = append(cg.Gateways, g.Code())
		}
		m.Status.CheckoutGateways = append(m.Status.CheckoutGateways, cg)
	}

	was := meta.IsStatusConditionTrue(m.Status.Conditions, paygatev1.ConditionInvalidGatewaySelection)
	if len(problems) == 0 {
		r.setCondition(m, paygatev1.ConditionInvalidGatewaySelection, metav1.ConditionFalse, ReasonSelectionValid,
			"Every selected gateway can serve this merchant")
		if was {
			r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, ReasonSelectionValid, "ResolveGateways", "The gateway selection is valid again")
		}
		return ctrl.Result{}, nil
	}
	reason := ReasonSelectionInvalid
	if problems[0].Reason == ReasonMultipleSelections {
		reason = ReasonMultipleSelections
	}
	msg := describeProblems(problems)
	r.setCondition(m, paygatev1.ConditionInvalidGatewaySelection, metav1.ConditionTrue, reason, msg)
	if !was {
		r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, reason, "ResolveGateways", "%s", msg)
	}
	return ctrl.Result{}, nil
}

// effectiveSelection picks the merchant's selection and lists what is wrong with it: selections
// beyond the first, and selected gateways that cannot serve.
func effectiveSelection(m *paygatev1.Merchant, selections []paygatev1.GatewaySelection, gateways []paygatev1.Gateway) (eligibility.Selection, []eligibility.SelectionProblem) {
	sel, ignored := eligibility.EffectiveSelection(selections)
	var problems []eligibility.SelectionProblem
	for _, extra := range ignored {
		problems = append(problems, eligibility.SelectionProblem{Code: paygatev1.GatewayCode(extra.Name), Reason: ReasonMultipleSelections})
	}
	return sel, append(problems, eligibility.CheckSelection(m, sel, gateways)...)
}

func describeProblems(problems []eligibility.SelectionProblem) string {
	parts := make([]string, 0, len(problems))
	for _, p := range problems {
		if p.Reason == ReasonMultipleSelections {
			parts = append(parts, fmt.Sprintf("GatewaySelection %s is ignored: a merchant has one selection", p.Code))
			continue
		}
		parts = append(parts, fmt.Sprintf("gateway %s: %s", p.Code, p.Reason))
	}
	return strings.Join(parts, "; ")
}

func (r *MerchantReconciler) setCondition(m *paygatev1.Merchant, t string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: m.Generation,
	})
}

func businessStatus(m *paygatev1.Merchant) paygatev1.BusinessStatus {
	if m.Spec.BusinessStatus == "" {
		return paygatev1.BusinessPending
	}
	return m.Spec.BusinessStatus
}

// SetupWithManager watches Merchants, the Secrets they own, their GatewaySelections and the
// Gateways of their currencies.
func (r *MerchantReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&paygatev1.Merchant{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&corev1.Secret{}).
		Watches(&paygatev1.Gateway{}, handler.EnqueueRequestsFromMapFunc(r.merchantsOfGateway)).
		Watches(&paygatev1.GatewaySelection{}, handler.EnqueueRequestsFromMapFunc(merchantOfSelection)).
		Named("merchant").
		Complete(quietConflicts(r))
}

// merchantsOfGateway maps a Gateway to the Merchants enabled for its currency (a gateway's
// currency is immutable, so old and new object agree).
func (r *MerchantReconciler) merchantsOfGateway(ctx context.Context, o client.Object) []reconcile.Request {
	g := o.(*paygatev1.Gateway)
	var merchants paygatev1.MerchantList
	if err := r.List(ctx, &merchants, client.MatchingFields{index.MerchantCurrency: string(g.Spec.Currency)}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing merchants of a gateway", "gateway", g.Name)
		return nil
	}
	out := make([]reconcile.Request, 0, len(merchants.Items))
	for _, m := range merchants.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.Namespace, Name: m.Name}})
	}
	return out
}

func merchantOfSelection(_ context.Context, o client.Object) []reconcile.Request {
	s := o.(*paygatev1.GatewaySelection)
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Spec.MerchantRef.Name}}}
}
