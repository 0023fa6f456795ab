// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/kube"
)

// runLedger runs `paygate ledger check`: it recomputes every balance from the archive's rows and
// the live payments, payouts and refunds, checks the invariant available = settled - paidOut -
// reserved - refunded - refundsReserved >= 0 on every stored entry, and prints each difference
// (docs/ledger.md, Checking the ledger). Exit status: 0 when everything agrees, 1 on a difference
// or an error, 2 on a usage error.
func runLedger(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, "Usage: paygate ledger check [--archive-dsn-file FILE] [--timeout 5m]")
		return 2
	}
	fs := flag.NewFlagSet("paygate ledger check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var arch archiveOptions
	arch.bindFlags(fs)
	timeout := fs.Duration("timeout", 5*time.Minute, "How long the check may take.")
	kubeconfig := fs.String("kubeconfig", "", "Path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config or the in-cluster service account).")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	store, err := arch.open(ctx, "paygate-ledger-check")
	if err != nil {
		fmt.Fprintf(stderr, "paygate ledger check: %v\n", err)
		return 2
	}
	var checkArchive controllers.LedgerCheckArchive
	if store != nil {
		defer store.Close()
		checkArchive = store
	}
	if *kubeconfig != "" {
		if err := flag.CommandLine.Set("kubeconfig", *kubeconfig); err != nil {
			fmt.Fprintf(stderr, "paygate ledger check: %v\n", err)
			return 2
		}
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintf(stderr, "paygate ledger check: loading a kubeconfig: %v\n", err)
		return 1
	}
	c, err := client.New(cfg, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		fmt.Fprintf(stderr, "paygate ledger check: %v\n", err)
		return 1
	}
	res, err := controllers.CheckLedgers(ctx, c, checkArchive)
	if err != nil {
		fmt.Fprintf(stderr, "paygate ledger check: %v\n", err)
		return 1
	}
	return printLedgerCheck(stdout, res, store != nil)
}

// printLedgerCheck prints what the check found and returns the exit status: 0 without a
// difference, 1 with one.
func printLedgerCheck(stdout io.Writer, res controllers.LedgerCheck, archived bool) int {
	where := "the live payments, payouts and refunds only (no archive configured)"
	if archived {
		where = fmt.Sprintf("the archive (%d carried-forward entries) and the live payments, payouts and refunds", res.CarriedForward)
	}
	fmt.Fprintf(stdout, "Checked %d balances against %s.\n", res.Balances, where)
	if len(res.Differences) == 0 {
		fmt.Fprintln(stdout, "No difference.")
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tMERCHANT\tENVIRONMENT\tCURRENCY\tFIELD\tSTORED\tRECOMPUTED")
	for _, d := range res.Differences {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Namespace, d.Merchant, d.Environment, d.Currency, d.Field, d.Stored, d.Computed)
	}
	_ = tw.Flush()
	fmt.Fprintf(stdout, "%d differences. A balance that was being updated may differ once; run the check again: a difference that stays is drift.\n", len(res.Differences))
	return 1
}
