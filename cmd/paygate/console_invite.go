// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/apiserver"
	"github.com/paygate/paygate/console"
	"github.com/paygate/paygate/internal/consoleauth"
	"github.com/paygate/paygate/internal/kube"
)

const consoleInviteUsage = "Usage: paygate console invite --namespace NS --merchant NAME --email ADDRESS " +
	"[--role owner|developer|finance|viewer] [--name DISPLAY-NAME] [--public-url URL] [--valid 72h] [--secrets-namespace paygate-system] [--kubeconfig FILE]"

// runConsole runs `paygate console invite`: it creates a merchant's console user (the platform
// team's way to give a merchant its first owner) and prints a one-time link that lets them choose
// a password (docs/console.md, People). Inviting an existing user again replaces their earlier
// link. Exit status: 0 with the link printed, 1 on an error, 2 on a usage error.
func runConsole(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "code" {
		return printConsoleCode(stdout, stderr)
	}
	if len(args) == 0 || args[0] != "invite" {
		fmt.Fprintln(stderr, consoleInviteUsage+"\n       paygate console code   (the current second-factor code of $PAYGATE_CONSOLE_TOTP_SECRET)")
		return 2
	}
	fs := flag.NewFlagSet("paygate console invite", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ns := fs.String("namespace", "", "Namespace of the merchant.")
	merchant := fs.String("merchant", "", "Name of the Merchant the user belongs to.")
	email := fs.String("email", "", "Email address the user signs in with.")
	role := fs.String("role", string(paygatev1.ConsoleOwner), "owner, developer, finance or viewer.")
	name := fs.String("name", "", "The user's name as the console shows it.")
	publicURL := fs.String("public-url", "http://127.0.0.1:8443", "Where browsers reach the apiserver (its --public-url).")
	valid := fs.Duration("valid", console.DefaultInviteLifetime, "How long the link works.")
	secretsNS := fs.String("secrets-namespace", apiserver.DefaultConsoleSecretsNamespace, "The apiserver's namespace (its --console-secrets-namespace), where the user's credentials Secret is kept.")
	kubeconfig := fs.String("kubeconfig", "", "Path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config or the in-cluster service account).")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	r := paygatev1.ConsoleRole(*role)
	switch {
	case *ns == "" || *merchant == "" || *email == "":
		fmt.Fprintln(stderr, "paygate console invite: --namespace, --merchant and --email are required\n"+consoleInviteUsage)
		return 2
	case r != paygatev1.ConsoleOwner && r != paygatev1.ConsoleDeveloper && r != paygatev1.ConsoleFinance && r != paygatev1.ConsoleViewer:
		fmt.Fprintf(stderr, "paygate console invite: --role must be owner, developer, finance or viewer, not %q\n", *role)
		return 2
	case *valid < time.Minute || *valid > 30*24*time.Hour:
		fmt.Fprintln(stderr, "paygate console invite: --valid must be between 1m and 720h")
		return 2
	}
	if *kubeconfig != "" {
		if err := flag.CommandLine.Set("kubeconfig", *kubeconfig); err != nil {
			fmt.Fprintf(stderr, "paygate console invite: %v\n", err)
			return 2
		}
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintf(stderr, "paygate console invite: loading a kubeconfig: %v\n", err)
		return 1
	}
	c, err := client.New(cfg, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		fmt.Fprintf(stderr, "paygate console invite: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := &paygatev1.Merchant{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: *ns, Name: *merchant}, m); err != nil {
		fmt.Fprintf(stderr, "paygate console invite: reading merchant %s/%s: %v\n", *ns, *merchant, err)
		return 1
	}
	inv, err := console.Invite(ctx, c, *secretsNS, m, *email, r, *name, *publicURL, *valid, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "paygate console invite: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Invited %s as %s of %s/%s (console user %s). Send them this link; it works once, until %s:\n%s\n",
		inv.User.Spec.Email, inv.User.Spec.Role, m.Namespace, m.Name, inv.User.Name,
		inv.User.Status.InvitationExpires.UTC().Format(time.RFC3339), inv.Link)
	return 0
}

// printConsoleCode prints the current TOTP code of $PAYGATE_CONSOLE_TOTP_SECRET: the second factor
// of `make run`'s demo console owner (its credentials.env sets the variable).
func printConsoleCode(stdout, stderr io.Writer) int {
	secret := os.Getenv("PAYGATE_CONSOLE_TOTP_SECRET")
	if secret == "" {
		fmt.Fprintln(stderr, "paygate console code: PAYGATE_CONSOLE_TOTP_SECRET is not set (source .paygate/dev/credentials.env)")
		return 2
	}
	code, err := consoleauth.TOTPCode(secret, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "paygate console code: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, code)
	return 0
}
