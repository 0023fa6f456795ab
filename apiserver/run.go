// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/index"
	"github.com/paygate/paygate/internal/kube"
)

// DefaultReadHeaderTimeout is how long a client may take to send a request's headers, unless
// Options.ReadHeaderTimeout says otherwise (--read-header-timeout).
const DefaultReadHeaderTimeout = 10 * time.Second

// Runtime is a running apiserver: its cache and its HTTP listener.
type Runtime struct {
	Server   *Server
	Listener net.Listener
}

// Start connects to Kubernetes, fills the informer cache, and serves the API on addr until ctx
// ends. It returns once the cache has synced and the listener is open.
func Start(ctx context.Context, cfg *rest.Config, addr string, opts Options) (*Runtime, <-chan error, error) {
	cl, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = kube.Scheme()
		o.Cache = kube.APIServerCacheOptions() // cached deliveries without their payload
	})
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	if err := index.SetupAPIServer(ctx, cl.GetFieldIndexer()); err != nil {
		return nil, nil, fmt.Errorf("setting up cache indexes: %w", err)
	}
	// Refunds by payment, for the payment records' refund fields (refundsSummary). Registering it
	// also starts the Refund informer with the others, so it has synced before the API serves.
	if err := cl.GetFieldIndexer().IndexField(ctx, &paygatev1.Refund{}, refundPaymentIndex, refundPaymentKeys); err != nil {
		return nil, nil, fmt.Errorf("indexing refunds by payment: %w", err)
	}
	// The console's webhook deliveries (apiserver/deliveries.go): its informer starts with the
	// others, so its list index has synced before the API serves.
	if _, err := cl.GetCache().GetInformer(ctx, &paygatev1.WebhookDelivery{}); err != nil {
		return nil, nil, fmt.Errorf("watching webhook deliveries: %w", err)
	}
	cacheDone := make(chan error, 1)
	go func() { cacheDone <- cl.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if !cl.GetCache().WaitForCacheSync(syncCtx) {
		return nil, nil, errors.New("the informer cache did not sync")
	}
	opts.Cache, opts.Writer, opts.APIReader = cl.GetCache(), cl.GetClient(), cl.GetAPIReader()
	srv := New(opts)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	readHeaderTimeout := opts.ReadHeaderTimeout
	if readHeaderTimeout <= 0 {
		readHeaderTimeout = DefaultReadHeaderTimeout
	}
	httpServer := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    32 << 10,
	}
	done := make(chan error, 1)
	go func() {
		err := httpServer.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- errors.Join(err, <-cacheDone)
	}()
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = httpServer.Shutdown(shutdownCtx)
	}()
	return &Runtime{Server: srv, Listener: ln}, done, nil
}
