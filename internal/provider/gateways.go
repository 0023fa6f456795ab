// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// Credential kinds (the value of the label paygate.dev/credential the manager caches Secrets by)
// and the keys of the pawapay and daraja gateways' Secrets (docs/providers.md).
const (
	CredentialKindPawapay = "pawapay"
	CredentialKindDaraja  = "daraja"

	// PawapaySecretToken is the default key of a pawapay gateway's Secret.
	PawapaySecretToken = "token"

	DarajaSecretConsumerKey       = "consumerKey"
	DarajaSecretConsumerSecret    = "consumerSecret"
	DarajaSecretPasskey           = "passkey"
	DarajaSecretCallbackSecret    = "callbackSecret"
	DarajaSecretInitiatorName     = "initiatorName"
	DarajaSecretInitiatorPassword = "initiatorPassword"
	DarajaSecretCertificate       = "certificate"
)

// Reasons a gateway's credentials cannot be used (GatewayError.Reason); the gateway controller
// reports them in the ProviderReady condition.
const (
	ReasonSecretMissing       = "SecretMissing"
	ReasonSecretKeyMissing    = "SecretKeyMissing"
	ReasonProviderConfig      = "ProviderConfigInvalid"
	ReasonProviderUnreachable = "ProviderUnreachable"
	ReasonCredentialsRejected = "CredentialsRejected"
	ReasonProviderUnavailable = "ProviderUnavailable"
)

// GatewayError says why a pawapay or daraja gateway's provider cannot be used. Its Message is safe
// to show in status and events: it names Secrets and keys, never their content, and carries no
// provider error text. Err (for logs) carries no secret either: the adapters redact theirs.
type GatewayError struct {
	Reason  string
	Message string
	Err     error
}

func (e *GatewayError) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *GatewayError) Unwrap() error { return e.Err }

// GatewayCheck is what a live check of a gateway's provider found.
type GatewayCheck struct {
	// MinAmount and MaxAmount are the provider's deposit limits ("" when it states none).
	MinAmount, MaxAmount string
	// Decimals is how many decimal places an amount may carry.
	Decimals int32
}

// Gateways builds the pawaPay and Daraja adapters of gateways from their spec and Secret, reusing
// an adapter while neither changes (so that Daraja's access token survives between calls).
type Gateways struct {
	Reader client.Reader
	// DarajaCallbackURL is the base URL Daraja posts results to: a gateway's results go under
	// "<DarajaCallbackURL>/<gateway>/", every attempt with its own sealed path token (the
	// apiserver's /internal/provider/callbacks/daraja). Daraja gateways cannot send without it.
	DarajaCallbackURL string
	// ReceiveOnly builds adapters that receive callbacks and confirm them by query but never
	// send (the apiserver's): Daraja gateways then need no DarajaCallbackURL.
	ReceiveOnly bool
	// HTTPClient makes the calls; nil means each adapter's default.
	HTTPClient *http.Client
	// Clock reads the time for the Daraja adapter; nil means time.Now.
	Clock func() time.Time

	mu    sync.Mutex
	cache map[string]cachedGateway
}

type cachedGateway struct {
	version  string
	provider Provider
}

// For returns the adapter of a pawapay or daraja gateway.
func (g *Gateways) For(ctx context.Context, gw *paygatev1.Gateway) (Provider, error) {
	switch gw.Spec.Provider {
	case paygatev1.ProviderPawapay:
		return g.Pawapay(ctx, gw)
	case paygatev1.ProviderDaraja:
		return g.Daraja(ctx, gw)
	}
	return nil, fmt.Errorf("gateway %s: provider %q is not pawapay or daraja", gw.Name, gw.Spec.Provider)
}

// Check makes a harmless live call to the gateway's provider and returns its limits: pawaPay's
// active configuration for the provider (and its availability), Daraja's token fetch (whole
// shillings). Every error is a *GatewayError.
func (g *Gateways) Check(ctx context.Context, gw *paygatev1.Gateway) (GatewayCheck, error) {
	switch gw.Spec.Provider {
	case paygatev1.ProviderPawapay:
		p, err := g.Pawapay(ctx, gw)
		if err != nil {
			return GatewayCheck{}, err
		}
		return checkPawapay(ctx, p, gw)
	case paygatev1.ProviderDaraja:
		d, err := g.Daraja(ctx, gw)
		if err != nil {
			return GatewayCheck{}, err
		}
		if _, err := d.accessToken(ctx); err != nil {
			return GatewayCheck{}, classify("Daraja", err)
		}
		return GatewayCheck{Decimals: 0}, nil
	}
	return GatewayCheck{}, &GatewayError{Reason: ReasonProviderConfig, Message: fmt.Sprintf("provider %q has no live check", gw.Spec.Provider)}
}

func checkPawapay(ctx context.Context, p *Pawapay, gw *paygatev1.Gateway) (GatewayCheck, error) {
	conf, err := p.ActiveConfiguration(ctx, "")
	if err != nil {
		var pe *PawapayError
		if !errors.As(err, &pe) && !isTransport(err) {
			// An answer without the provider: the account does not have it enabled.
			return GatewayCheck{}, &GatewayError{Reason: ReasonProviderUnavailable, Err: err,
				Message: fmt.Sprintf("pawaPay's active configuration does not list provider %s for this account, or could not be read", gw.Spec.Pawapay.Provider)}
		}
		return GatewayCheck{}, classify("pawaPay", err)
	}
	op, ok := conf.Limits(string(gw.Spec.Currency), PawapayOpDeposit)
	if !ok {
		return GatewayCheck{}, &GatewayError{Reason: ReasonProviderUnavailable,
			Message: fmt.Sprintf("pawaPay provider %s takes no deposits in %s", gw.Spec.Pawapay.Provider, gw.Spec.Currency)}
	}
	avail, err := p.Availability(ctx)
	if err != nil {
		return GatewayCheck{}, classify("pawaPay", err)
	}
	if s := avail.Operations[PawapayOpDeposit]; s == PawapayClosed || (s == "" && op.Status == PawapayClosed) {
		return GatewayCheck{}, &GatewayError{Reason: ReasonProviderUnavailable,
			Message: fmt.Sprintf("pawaPay reports deposits to %s as CLOSED", gw.Spec.Pawapay.Provider)}
	}
	c := GatewayCheck{MinAmount: op.MinAmount, MaxAmount: op.MaxAmount, Decimals: 2}
	if op.Decimals == PawapayDecimalsNone {
		c.Decimals = 0
	}
	return c, nil
}

// classify turns an adapter error into a GatewayError: credentials refused, or the provider not
// reached (transport errors, timeouts, 5xx and other answers).
func classify(name string, err error) *GatewayError {
	var pe *PawapayError
	if errors.As(err, &pe) && pe.Unauthorized() {
		return &GatewayError{Reason: ReasonCredentialsRejected, Err: err, Message: name + " refused the credentials"}
	}
	var de *DarajaError
	if errors.As(err, &de) && (de.StatusCode == http.StatusBadRequest || de.StatusCode == http.StatusUnauthorized || de.StatusCode == http.StatusForbidden) {
		return &GatewayError{Reason: ReasonCredentialsRejected, Err: err, Message: name + " refused the credentials"}
	}
	return &GatewayError{Reason: ReasonProviderUnreachable, Err: err, Message: name + " could not be reached or gave no usable answer"}
}

// isTransport reports an error that is not an answer from the provider.
func isTransport(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// Pawapay returns the pawaPay adapter of gw.
func (g *Gateways) Pawapay(ctx context.Context, gw *paygatev1.Gateway) (*Pawapay, error) {
	cfg := gw.Spec.Pawapay
	if gw.Spec.Provider != paygatev1.ProviderPawapay || cfg == nil {
		return nil, &GatewayError{Reason: ReasonProviderConfig, Message: fmt.Sprintf("gateway %s has no spec.pawapay", gw.Name)}
	}
	ref := cfg.CredentialsSecretRef
	key := ref.Key
	if key == "" {
		key = PawapaySecretToken
	}
	secret, err := g.secret(ctx, gw, ref.Namespace, ref.Name, CredentialKindPawapay, key)
	if err != nil {
		return nil, err
	}
	version := fmt.Sprintf("%d/%s/%s/%s", gw.Generation, secret.UID, secret.ResourceVersion, key)
	p, err := g.cached(gw.Name, version, func() (Provider, error) {
		return NewPawapay(PawapayConfig{
			BaseURL: PawapayBaseURL(cfg.BaseURL), Token: string(secret.Data[key]), Provider: cfg.Provider,
			Country: cfg.Country, HTTPClient: g.HTTPClient, Timeout: time.Duration(cfg.TimeoutSeconds) * time.Second,
			// Auto: pawaPay judges the decimals; the apiserver already refused an amount with more
			// than status.providerLimits allows.
			Decimals: PawapayDecimalsAuto,
		})
	})
	if err != nil {
		return nil, err
	}
	return p.(*Pawapay), nil
}

// Daraja returns the Daraja adapter of gw.
func (g *Gateways) Daraja(ctx context.Context, gw *paygatev1.Gateway) (*Daraja, error) {
	cfg := gw.Spec.Daraja
	if gw.Spec.Provider != paygatev1.ProviderDaraja || cfg == nil {
		return nil, &GatewayError{Reason: ReasonProviderConfig, Message: fmt.Sprintf("gateway %s has no spec.daraja", gw.Name)}
	}
	callbackBase := ""
	if !g.ReceiveOnly {
		callbackBase = strings.TrimSuffix(g.DarajaCallbackURL, "/") + "/" + gw.Name
	}
	if g.DarajaCallbackURL == "" && !g.ReceiveOnly {
		return nil, &GatewayError{Reason: ReasonProviderConfig, Message: "the manager has no Daraja callback URL (--daraja-callback-url or --provider-callback-url)"}
	}
	ref := cfg.CredentialsSecretRef
	secret, err := g.secret(ctx, gw, ref.Namespace, ref.Name, CredentialKindDaraja,
		DarajaSecretConsumerKey, DarajaSecretConsumerSecret, DarajaSecretPasskey, DarajaSecretCallbackSecret)
	if err != nil {
		return nil, err
	}
	version := fmt.Sprintf("%d/%s/%s", gw.Generation, secret.UID, secret.ResourceVersion)
	p, err := g.cached(gw.Name, version, func() (Provider, error) {
		d := secret.Data
		return NewDaraja(DarajaConfig{
			BaseURL: DarajaBaseURL(cfg.BaseURL), ConsumerKey: string(d[DarajaSecretConsumerKey]),
			ConsumerSecret: string(d[DarajaSecretConsumerSecret]), ShortCode: cfg.ShortCode,
			Passkey: string(d[DarajaSecretPasskey]), TransactionType: string(cfg.TransactionType), PartyB: cfg.TillNumber,
			InitiatorName: string(d[DarajaSecretInitiatorName]), InitiatorPassword: string(d[DarajaSecretInitiatorPassword]),
			CertificatePEM: d[DarajaSecretCertificate], B2CShortCode: cfg.B2CShortCode,
			CallbackBaseURL: callbackBase, CallbackSecret: d[DarajaSecretCallbackSecret],
			HTTPClient: g.HTTPClient, Timeout: time.Duration(cfg.TimeoutSeconds) * time.Second, Clock: g.Clock,
		})
	})
	if err != nil {
		return nil, err
	}
	return p.(*Daraja), nil
}

// cached returns the adapter cached for gateway name at version, or builds and caches one. A
// build error becomes a ProviderConfigInvalid GatewayError; the adapters' errors name no secret.
func (g *Gateways) cached(name, version string, build func() (Provider, error)) (Provider, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.cache[name]; ok && c.version == version {
		return c.provider, nil
	}
	p, err := build()
	if err != nil {
		return nil, &GatewayError{Reason: ReasonProviderConfig, Err: err,
			Message: fmt.Sprintf("the provider configuration of gateway %s is not usable (see the manager's log)", name)}
	}
	if g.cache == nil {
		g.cache = map[string]cachedGateway{}
	}
	g.cache[name] = cachedGateway{version: version, provider: p}
	return p, nil
}

// secret reads a gateway's Secret and checks that it has every one of keys.
func (g *Gateways) secret(ctx context.Context, gw *paygatev1.Gateway, ns, name, kind string, keys ...string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	if err := g.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret); err != nil {
		msg := fmt.Sprintf("Secret %s/%s of gateway %s cannot be read (it must exist and carry the label %s=%s)",
			ns, name, gw.Name, paygatev1.LabelCredential, kind)
		if apierrors.IsNotFound(err) {
			return nil, &GatewayError{Reason: ReasonSecretMissing, Message: msg, Err: err}
		}
		return nil, fmt.Errorf("%s: %w", msg, err)
	}
	for _, k := range keys {
		if len(secret.Data[k]) == 0 {
			return nil, &GatewayError{Reason: ReasonSecretKeyMissing,
				Message: fmt.Sprintf("Secret %s/%s of gateway %s has no %q key", ns, name, gw.Name, k)}
		}
	}
	return secret, nil
}

// PawapayBaseURL resolves spec.pawapay.baseURL: sandbox, production ("" too) or an explicit URL.
func PawapayBaseURL(u string) string {
	switch u {
	case paygatev1.BaseURLSandbox:
		return PawapaySandboxURL
	case "", paygatev1.BaseURLProduction:
		return PawapayProductionURL
	}
	return u
}

// DarajaBaseURL resolves spec.daraja.baseURL: sandbox, production ("" too) or an explicit URL.
func DarajaBaseURL(u string) string {
	switch u {
	case paygatev1.BaseURLSandbox:
		return DarajaSandboxURL
	case "", paygatev1.BaseURLProduction:
		return DarajaProductionURL
	}
	return u
}
