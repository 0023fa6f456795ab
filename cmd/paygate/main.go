// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command paygate is the Paygate merchant payment gateway: one binary with the subcommands
// manager (the controllers), apiserver (the merchant REST API) and dev (both, against a local
// control plane).
package main

import (
	"fmt"
	"os"
)

const usage = `paygate: a Kubernetes-native merchant payment gateway

Usage:
  paygate manager   [flags]   run the controllers (leader-elected)
  paygate apiserver [flags]   run the merchant REST API
  paygate dev       [flags]   run a local control plane with demo configuration and the controllers
  paygate ledger check [flags] recompute every balance from the archive and the live objects
  paygate provider check GATEWAY [flags]  a harmless live call to a pawapay or daraja gateway's provider
  paygate console invite [flags] create a merchant's console user and print their one-time sign-up link
  paygate console code        the current second-factor code of $PAYGATE_CONSOLE_TOTP_SECRET (make run's console owner)
  paygate help                show this text

Run "paygate <command> -h" for the flags of a command.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "manager":
		os.Exit(runManager(args))
	case "apiserver":
		os.Exit(runAPIServer(args))
	case "dev":
		os.Exit(runDev(args))
	case "ledger":
		os.Exit(runLedger(args, os.Stdout, os.Stderr))
	case "provider":
		os.Exit(runProvider(args, os.Stdout, os.Stderr))
	case "console":
		os.Exit(runConsole(args, os.Stdout, os.Stderr))
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "paygate: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
}
