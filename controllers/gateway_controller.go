// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/provider"
)

// Gateway condition reasons (docs/configuration.md, Gateway). A pass that failed otherwise sets
// Ready's reason from failureReason.
const (
	ReasonGatewayReady         = "GatewayReady"
	ReasonConfigInvalid        = "ConfigInvalid"
	ReasonProductionSimulated  = "ProductionSimulated"
	messageProductionSimulated = "Production payments through this gateway are simulated: they settle and no money moves (spec.simulation is SandboxAndProduction). For demos only."

	// ReasonProviderReady: the provider's credentials work and it takes deposits.
	ReasonProviderReady = "ProviderReady"
	// ReasonProviderNotReady on Ready: the gateway is out of service because ProviderReady is
	// False (its reason says why).
	ReasonProviderNotReady = "ProviderNotReady"
	// DefaultProviderRecheck is how often a pawapay or daraja gateway's provider is checked again.
	DefaultProviderRecheck = 5 * time.Minute
)

// GatewayProviderChecker makes a harmless live call to a pawapay or daraja gateway's provider and
// returns its limits; its errors are *provider.GatewayError (provider.Registry implements it).
type GatewayProviderChecker interface {
	CheckGateway(ctx context.Context, gw *paygatev1.Gateway) (provider.GatewayCheck, error)
}

// GatewayCheckerOf is the checker of a manager's providers, nil when they build no pawapay or
// daraja adapter (the gateway controller then leaves ProviderReady alone).
func GatewayCheckerOf(p Providers) GatewayProviderChecker {
	if r, ok := p.(*provider.Registry); ok {
		if r.Gateways == nil {
			return nil
		}
		return r
	}
	c, _ := p.(GatewayProviderChecker)
	return c
}

// GatewayReconciler assigns each Gateway its integer id, checks what the schema cannot (that its
// amounts fit its currency's decimal places), and warns while it simulates production.
//
// For a pawapay or daraja gateway it also checks the provider (its Secret, then a harmless live
// call), reports ProviderReady, caches the provider's limits in status.providerLimits, and checks
// again every RecheckAfter. While ProviderReady is not True the gateway serves no payment that
// would go to the provider (Gateway.ServesEnvironment) and Ready is False.
type GatewayReconciler struct {
	client.Client
	Recorder events.EventRecorder
	IDs      *IDAllocator
	// Checker checks pawapay and daraja gateways' providers; nil leaves ProviderReady alone.
	Checker GatewayProviderChecker
	// RecheckAfter is the pause between checks of a provider (default DefaultProviderRecheck).
	RecheckAfter time.Duration
}

// +kubebuilder:rbac:groups=paygate.dev,resources=gateways,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=gateways/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=idclaims,verbs=get;list;watch;create

// Reconcile assigns the gateway's id and reports whether its configuration can work.
func (r *GatewayReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	gw := &paygatev1.Gateway{}
	if err := r.Get(ctx, req.NamespacedName, gw); err != nil {
		if apierrors.IsNotFound(err) && r.Checker != nil {
			metrics.ForgetWalletBalances(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patch := newStatusPatch(r.Client, gw, func(gw *paygatev1.Gateway) any { return &gw.Status })
	defer func() {
		r.summarizeGateway(gw, retErr)
		if err := patch.Patch(ctx, gw); err != nil {
			retErr = errors.Join(retErr, client.IgnoreNotFound(fmt.Errorf("patching gateway status: %w", err)))
		}
	}()
	id, err := r.IDs.Ensure(ctx, paygatev1.IDClaimGateway, gw)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("assigning gateway id: %w", err)
	}
	gw.Status.ID = id
	if r.Checker == nil {
		return ctrl.Result{}, nil
	}
	if gw.Spec.Provider != paygatev1.ProviderPawapay && gw.Spec.Provider != paygatev1.ProviderDaraja {
		metrics.ForgetWalletBalances(gw.Name)
		return ctrl.Result{}, nil
	}
	r.checkProvider(ctx, gw)
	r.readWallets(ctx, gw)
	r.requestAccountBalance(ctx, gw)
	after := r.RecheckAfter
	if after <= 0 {
		after = DefaultProviderRecheck
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// checkProvider sets ProviderReady and status.providerLimits from a live check. Its messages name
// Secrets and keys, never their content nor the provider's error text (which goes to the log; the
// adapters keep secrets out of it).
func (r *GatewayReconciler) checkProvider(ctx context.Context, gw *paygatev1.Gateway) {
	cond := metav1.Condition{Type: paygatev1.ConditionProviderReady, Status: metav1.ConditionTrue, Reason: ReasonProviderReady,
		ObservedGeneration: gw.Generation}
	res, err := r.Checker.CheckGateway(ctx, gw)
	if err != nil {
		var ge *provider.GatewayError
		if errors.As(err, &ge) {
			cond.Reason, cond.Message = ge.Reason, ge.Message
		} else {
			cond.Reason, cond.Message = failureReason(err)
		}
		cond.Status = metav1.ConditionFalse
		ctrl.LoggerFrom(ctx).Info("Gateway provider check failed", "gateway", gw.Name, "provider", gw.Spec.Provider,
			"reason", cond.Reason, "error", err.Error())
	} else {
		cond.Message = fmt.Sprintf("The %s credentials work and the provider takes deposits", gw.Spec.Provider)
		limits := &paygatev1.ProviderLimits{Decimals: res.Decimals}
		if res.MinAmount != "" {
			limits.MinAmount = ptrDecimal(res.MinAmount)
		}
		if res.MaxAmount != "" {
			limits.MaxAmount = ptrDecimal(res.MaxAmount)
		}
		gw.Status.ProviderLimits = limits
	}
	was := meta.FindStatusCondition(gw.Status.Conditions, paygatev1.ConditionProviderReady)
	if was == nil || was.Status != cond.Status || was.Reason != cond.Reason {
		eventType := corev1.EventTypeNormal
		if cond.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(gw, nil, eventType, cond.Reason, "CheckProvider", "%s", cond.Message)
	}
	meta.SetStatusCondition(&gw.Status.Conditions, cond)
}

// GatewayWallets reads the wallet balances of a pawapay gateway's pawaPay account, as
// provider.Pawapay.WalletBalances answers: currency, or "CURRENCY/PROVIDER" for a wallet kept for
// one provider, to its balance (a decimal string).
type GatewayWallets interface {
	GatewayWalletBalances(ctx context.Context, gw *paygatev1.Gateway) (map[string]string, error)
}

// walletsOf is the wallet reader of a gateway checker (a provider.Registry reads with its
// pawaPay adapters); nil when it reads none.
func walletsOf(c GatewayProviderChecker) GatewayWallets {
	w, _ := c.(GatewayWallets)
	return w
}

// readWallets exports the balances of a pawapay gateway's pawaPay wallets as
// paygate_provider_wallet_balance{gateway,currency,pawapay_provider} (docs/operations.md), after a
// provider check that passed. pawaPay answers GET /v2/wallet-balances with
// {"balances":[{"country","balance","currency","provider"}]}, balance a decimal string and provider
// empty for a country's wallet (the adapter filters by spec.pawapay.country when set):
// https://docs.pawapay.io/v2/api-reference/finances/wallet-balances
//
// The balance is informational: a failed read never touches the gateway's conditions (it stays in
// service); it is logged (the adapter's errors carry no token) and drops the gateway's series, so
// that a figure that cannot be refreshed is absent rather than stale. A balance that does not
// parse as a non-negative decimal is logged and left out. The series are labelled by gateway:
// pawaPay's answer names no account, and a Secret reference is no account key either (two Secrets
// may hold one token, one Secret may serve the sandbox and production), so gateways sharing an
// account each report its wallets.
func (r *GatewayReconciler) readWallets(ctx context.Context, gw *paygatev1.Gateway) {
	w := walletsOf(r.Checker)
	if w == nil || gw.Spec.Provider != paygatev1.ProviderPawapay ||
		!meta.IsStatusConditionTrue(gw.Status.Conditions, paygatev1.ConditionProviderReady) {
		metrics.ForgetWalletBalances(gw.Name)
		return
	}
	log := ctrl.LoggerFrom(ctx)
	raw, err := w.GatewayWalletBalances(ctx, gw)
	if err != nil {
		log.Info("Reading the gateway's pawaPay wallet balances failed; the gateway stays in service", "gateway", gw.Name,
			"error", err.Error())
		metrics.ForgetWalletBalances(gw.Name)
		return
	}
	balances := make(map[metrics.Wallet]money.Amount, len(raw))
	for key, text := range raw {
		currency, prov, _ := strings.Cut(key, "/")
		a, err := money.ParseAmount(text)
		if err != nil {
			log.Info("A pawaPay wallet balance is not a non-negative decimal; left out", "gateway", gw.Name, "wallet", key,
				"error", err.Error())
			continue
		}
		balances[metrics.Wallet{Currency: currency, Provider: prov}] = a
	}
	metrics.SetWalletBalances(gw.Name, balances)
}

// AccountBalanceRequester asks a daraja gateway's M-Pesa organisation for its account balances;
// they arrive at the apiserver, which exports paygate_provider_account_balance.
type AccountBalanceRequester interface {
	RequestAccountBalance(ctx context.Context, gw *paygatev1.Gateway) error
}

// requestAccountBalance asks Daraja for the balances of a daraja gateway whose check passed
// (https://developer.safaricom.co.ke/apis/AccountBalance). Informational like the wallets: a
// failure is logged and keeps the gateway in service, and a gateway without an initiator (no B2C)
// is not asked.
func (r *GatewayReconciler) requestAccountBalance(ctx context.Context, gw *paygatev1.Gateway) {
	req, ok := r.Checker.(AccountBalanceRequester)
	if !ok || gw.Spec.Provider != paygatev1.ProviderDaraja ||
		!meta.IsStatusConditionTrue(gw.Status.Conditions, paygatev1.ConditionProviderReady) {
		return
	}
	if err := req.RequestAccountBalance(ctx, gw); err != nil && !errors.Is(err, provider.ErrDarajaNotConfigured) {
		ctrl.LoggerFrom(ctx).Info("Asking Daraja for the account balances failed; the gateway stays in service",
			"gateway", gw.Name, "error", err.Error())
	}
}

func ptrDecimal(s string) *paygatev1.Decimal {
	d := paygatev1.Decimal(s)
	return &d
}

// summarizeGateway sets Ready: False while the configuration cannot work or the pass failed, and
// records an event when Ready flips.
func (r *GatewayReconciler) summarizeGateway(gw *paygatev1.Gateway, reconcileErr error) {
	ready := metav1.Condition{Type: paygatev1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonGatewayReady,
		Message: "Gateway configuration is valid", ObservedGeneration: gw.Generation}
	if problems := CheckGatewayAmounts(&gw.Spec); len(problems) > 0 {
		// Derived from the spec alone: the message changes only when the spec does.
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonConfigInvalid, strings.Join(problems, "; ")
	} else if reconcileErr != nil {
		ready.Status = metav1.ConditionFalse
		ready.Reason, ready.Message = failureReason(reconcileErr)
	} else if c := meta.FindStatusCondition(gw.Status.Conditions, paygatev1.ConditionProviderReady); c != nil && c.Status != metav1.ConditionTrue &&
		(gw.Spec.Provider == paygatev1.ProviderPawapay || gw.Spec.Provider == paygatev1.ProviderDaraja) {
		ready.Status, ready.Reason = metav1.ConditionFalse, ReasonProviderNotReady
		ready.Message = "Out of service: the provider cannot be used (" + c.Reason + "): " + c.Message
	}
	if gw.Spec.Provider != paygatev1.ProviderPawapay && gw.Spec.Provider != paygatev1.ProviderDaraja {
		meta.RemoveStatusCondition(&gw.Status.Conditions, paygatev1.ConditionProviderReady)
		gw.Status.ProviderLimits = nil
	}
	var was metav1.ConditionStatus // copied: SetStatusCondition edits the slice in place
	if c := meta.FindStatusCondition(gw.Status.Conditions, paygatev1.ConditionReady); c != nil {
		was = c.Status
	}
	meta.SetStatusCondition(&gw.Status.Conditions, ready)
	r.reportSimulation(gw)
	if reconcileErr == nil {
		gw.Status.ObservedGeneration = gw.Generation
	}
	if was != ready.Status {
		eventType := corev1.EventTypeNormal
		if ready.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(gw, nil, eventType, ready.Reason, "ValidateGateway", "%s", ready.Message)
	}
}

// reportSimulation sets the warning condition SimulatingProduction while the gateway simulates
// production payments, with a Warning event when it turns on, and removes it otherwise.
func (r *GatewayReconciler) reportSimulation(gw *paygatev1.Gateway) {
	if !gw.SimulatesProduction() {
		meta.RemoveStatusCondition(&gw.Status.Conditions, paygatev1.ConditionSimulatingProduction)
		return
	}
	if !meta.IsStatusConditionTrue(gw.Status.Conditions, paygatev1.ConditionSimulatingProduction) {
		r.Recorder.Eventf(gw, nil, corev1.EventTypeWarning, ReasonProductionSimulated, "ValidateGateway", "%s", messageProductionSimulated)
	}
	meta.SetStatusCondition(&gw.Status.Conditions, metav1.Condition{Type: paygatev1.ConditionSimulatingProduction,
		Status: metav1.ConditionTrue, Reason: ReasonProductionSimulated, Message: messageProductionSimulated, ObservedGeneration: gw.Generation})
}

// CheckGatewayAmounts lists the amounts of a gateway spec that its currency cannot express.
func CheckGatewayAmounts(spec *paygatev1.GatewaySpec) []string {
	cur, ok := money.LookupCurrency(string(spec.Currency))
	if !ok {
		return []string{fmt.Sprintf("currency %q is not supported", spec.Currency)}
	}
	var problems []string
	check := func(field string, v *paygatev1.Decimal) {
		if v == nil || *v == "" {
			return
		}
		a, err := money.ParseAmount(string(*v))
		if err == nil {
			err = money.ValidateForCurrency(a, cur)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s %s: %v", field, *v, err))
		}
	}
	fixed := spec.Fees.Fixed
	check("fees.fixed", &fixed)
	check("minAmount", spec.MinAmount)
	check("maxAmount", spec.MaxAmount)
	return problems
}

// SetupWithManager watches Gateways.
func (r *GatewayReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&paygatev1.Gateway{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("gateway").
		Complete(quietConflicts(r))
}
