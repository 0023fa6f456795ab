// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// Keys of an upstream gateway's Secret, and the label it must carry (the manager caches only
// labelled Secrets).
const (
	UpstreamSecretToken          = "token"
	UpstreamSecretCallbackSecret = "callbackSecret"
	CredentialKindUpstream       = "upstream"
)

// Upstreams builds the adapters of upstream gateways from their configuration and Secret,
// reusing an adapter while neither changes.
type Upstreams struct {
	Reader client.Reader

	mu    sync.Mutex
	cache map[string]cachedUpstream
}

type cachedUpstream struct {
	version  string
	provider *Upstream
}

// For returns the adapter of gw.
func (u *Upstreams) For(ctx context.Context, gw *paygatev1.Gateway) (Provider, error) {
	cfg := gw.Spec.Upstream
	if cfg == nil {
		return nil, fmt.Errorf("gateway %s has provider upstream but no spec.upstream", gw.Name)
	}
	secret, err := UpstreamSecret(ctx, u.Reader, gw)
	if err != nil {
		return nil, err
	}
	version := fmt.Sprintf("%d/%s/%d/%s", gw.Generation, secret.UID, cfg.TimeoutSeconds, secret.ResourceVersion)
	u.mu.Lock()
	defer u.mu.Unlock()
	if c, ok := u.cache[gw.Name]; ok && c.version == version {
		return c.provider, nil
	}
	timeout := time.Duration(cfg.TimeoutSeconds) * time.Second
	p, err := NewUpstream(UpstreamConfig{BaseURL: cfg.BaseURL, Token: string(secret.Data[UpstreamSecretToken]), Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("configuring the upstream provider of gateway %s: %w", gw.Name, err)
	}
	if u.cache == nil {
		u.cache = map[string]cachedUpstream{}
	}
	u.cache[gw.Name] = cachedUpstream{version: version, provider: p}
	return p, nil
}

// UpstreamSecret reads an upstream gateway's Secret.
func UpstreamSecret(ctx context.Context, r client.Reader, gw *paygatev1.Gateway) (*corev1.Secret, error) {
	if gw.Spec.Upstream == nil {
		return nil, errors.New("the gateway has no upstream configuration")
	}
	ref := gw.Spec.Upstream.SecretRef
	secret := &corev1.Secret{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, secret); err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s of gateway %s (it must carry the label %s=%s): %w",
			ref.Namespace, ref.Name, gw.Name, paygatev1.LabelCredential, CredentialKindUpstream, err)
	}
	if len(secret.Data[UpstreamSecretToken]) == 0 {
		return nil, fmt.Errorf("secret %s/%s of gateway %s has no %q key", ref.Namespace, ref.Name, gw.Name, UpstreamSecretToken)
	}
	return secret, nil
}
