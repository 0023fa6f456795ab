// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/provider"
)

const providerCheckUsage = "Usage: paygate provider check GATEWAY [--kubeconfig FILE] [--timeout 30s]"

// runProvider runs `paygate provider check GATEWAY`: a harmless live call (pawaPay's active
// configuration and availability, Daraja's token) with the gateway's configuration and
// credentials, for an operator setting up a real account (docs/providers.md). It prints what the
// provider answered, never a credential. Exit status: 0 when the provider is usable, 1 when it is
// not (or on an error), 2 on a usage error.
func runProvider(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || args[0] != "check" {
		fmt.Fprintln(stderr, providerCheckUsage)
		return 2
	}
	name := args[1]
	fs := flag.NewFlagSet("paygate provider check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 30*time.Second, "How long the check may take.")
	kubeconfig := fs.String("kubeconfig", "", "Path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config or the in-cluster service account).")
	if err := fs.Parse(args[2:]); err != nil {
		return 2
	}
	if *kubeconfig != "" {
		if err := flag.CommandLine.Set("kubeconfig", *kubeconfig); err != nil {
			fmt.Fprintf(stderr, "paygate provider check: %v\n", err)
			return 2
		}
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintf(stderr, "paygate provider check: loading a kubeconfig: %v\n", err)
		return 1
	}
	c, err := client.New(cfg, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		fmt.Fprintf(stderr, "paygate provider check: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	return checkGatewayProvider(ctx, c, name, stdout, stderr)
}

// checkGatewayProvider checks the provider of gateway name with the credentials its Secret holds.
func checkGatewayProvider(ctx context.Context, c client.Reader, name string, stdout, stderr io.Writer) int {
	gw := &paygatev1.Gateway{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, gw); err != nil {
		fmt.Fprintf(stderr, "paygate provider check: reading gateway %s: %v\n", name, err)
		return 1
	}
	switch gw.Spec.Provider {
	case paygatev1.ProviderPawapay, paygatev1.ProviderDaraja:
	default:
		fmt.Fprintf(stderr, "paygate provider check: gateway %s is carried by %q; the check calls pawaPay or Daraja (pawapay and daraja gateways)\n",
			name, gw.Spec.Provider)
		return 1
	}
	res, err := (&provider.Gateways{Reader: c, ReceiveOnly: true}).Check(ctx, gw)
	if err != nil {
		var ge *provider.GatewayError
		if errors.As(err, &ge) {
			// The message names Secrets and keys, never their content; the cause is the adapter's
			// redacted error.
			fmt.Fprintf(stdout, "Gateway %s (%s): not usable: %s (%s)\n", name, gw.Spec.Provider, ge.Message, ge.Reason)
			if ge.Err != nil {
				fmt.Fprintf(stdout, "  cause: %v\n", ge.Err)
			}
			return 1
		}
		fmt.Fprintf(stderr, "paygate provider check: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Gateway %s (%s): usable.\n", name, gw.Spec.Provider)
	if res.MinAmount != "" || res.MaxAmount != "" {
		fmt.Fprintf(stdout, "  amounts: %s to %s %s\n", orAny(res.MinAmount), orAny(res.MaxAmount), gw.Spec.Currency)
	}
	fmt.Fprintf(stdout, "  decimal places: %d\n", res.Decimals)
	return 0
}

func orAny(s string) string {
	if s == "" {
		return "any"
	}
	return s
}
