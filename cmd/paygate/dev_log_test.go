// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build dev

package main

import (
	"context"
	"errors"
	"flag"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/paygate/paygate/test/testenv"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

type syncBuffer = testenv.SyncBuffer

// devLoggerFromFlags builds the dev logger as runDev does, from these command-line arguments,
// writing to out.
func devLoggerFromFlags(t *testing.T, out *syncBuffer, args ...string) logr.Logger {
	t.Helper()
	fs := flag.NewFlagSet("paygate dev", flag.ContinueOnError)
	var opts zap.Options
	devLogDefaults(&opts)
	opts.BindFlags(fs)
	showFramework := fs.Bool("log-framework", false, "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	opts.DestWriter = out
	return newDevLogger(opts, *showFramework)
}

// runLoggedController runs a real controller-runtime controller (no cluster: its one source is
// a channel) with log as the manager's logger, through one reconcile whose reconciler (Paygate's
// code) logs an info line and an error, and stops it. The controller logs its start-up and
// shutdown lines as in `paygate dev`.
func runLoggedController(t *testing.T, log logr.Logger) {
	t.Helper()
	reconciled := make(chan struct{})
	var once sync.Once
	r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		ctrl.LoggerFrom(ctx).Info("Paygate reconciled the object", "object", req.Name)
		ctrl.LoggerFrom(ctx).V(1).Info("Paygate debug detail")
		ctrl.LoggerFrom(ctx).Error(errors.New("provider unreachable"), "Paygate could not reach the provider")
		once.Do(func() { close(reconciled) })
		return reconcile.Result{}, nil
	})
	c, err := controller.NewUnmanaged("devlog", controller.Options{Reconciler: r, Logger: log, SkipNameValidation: ptr.To(true)})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan event.GenericEvent, 1)
	if err := c.Watch(source.Channel(events, &handler.EnqueueRequestForObject{})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	var obj client.Object = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "cm-1"}}
	events <- event.GenericEvent{Object: obj}
	select {
	case <-reconciled:
	case err := <-done:
		cancel()
		t.Fatalf("the controller stopped before it reconciled: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// lines are the log lines of out that contain s.
func lines(out, s string) []string {
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			got = append(got, l)
		}
	}
	return got
}

// TestDevLogger: by default the dev logger writes readable lines (not JSON), shows Paygate's info
// lines and errors, and hides controller-runtime's start-up and shutdown chatter; --log-framework
// shows that again; --zap-log-level=debug shows it at debug level; --zap-encoder=json is JSON.
func TestDevLogger(t *testing.T) {
	// The framework's messages of a controller's life, all at info.
	framework := []string{"Starting EventSource", "Starting Controller", "Starting workers", "All workers finished"}

	t.Run("default", func(t *testing.T) {
		var out syncBuffer
		runLoggedController(t, devLoggerFromFlags(t, &out))
		got := out.String()
		for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
			if strings.HasPrefix(l, "{") {
				t.Errorf("a JSON line: %s", l)
			}
		}
		if l := lines(got, "Paygate reconciled the object"); len(l) != 1 || !strings.Contains(l[0], "\tINFO\t") || !strings.Contains(l[0], `"object": "cm-1"`) {
			t.Errorf("Paygate's info line: %q, want one INFO line with its values", l)
		}
		if l := lines(got, "Paygate could not reach the provider"); len(l) != 1 || !strings.Contains(l[0], "\tERROR\t") || !strings.Contains(l[0], "provider unreachable") {
			t.Errorf("Paygate's error line: %q, want one ERROR line with the error", l)
		}
		if l := lines(got, "Paygate debug detail"); len(l) != 0 {
			t.Errorf("a debug line at the info level: %q", l)
		}
		for _, msg := range framework {
			if l := lines(got, msg); len(l) != 0 {
				t.Errorf("the framework's %q is shown: %q", msg, l)
			}
		}
		if strings.Contains(got, "goroutine ") || strings.Contains(got, "dev_log_test.go") {
			t.Errorf("a stack trace or caller in the output:\n%s", got)
		}
	})

	t.Run("--log-framework", func(t *testing.T) {
		var out syncBuffer
		runLoggedController(t, devLoggerFromFlags(t, &out, "--log-framework"))
		got := out.String()
		for _, msg := range append(framework, "Paygate reconciled the object") {
			if l := lines(got, msg); len(l) == 0 || !strings.Contains(l[0], "\tINFO\t") {
				t.Errorf("%q: %q, want it at INFO", msg, l)
			}
		}
	})

	t.Run("--zap-log-level=debug", func(t *testing.T) {
		var out syncBuffer
		runLoggedController(t, devLoggerFromFlags(t, &out, "--zap-log-level=debug"))
		got := out.String()
		for _, msg := range framework {
			if l := lines(got, msg); len(l) == 0 || !strings.Contains(l[0], "\tDEBUG\t") {
				t.Errorf("%q: %q, want it at DEBUG", msg, l)
			}
		}
		if l := lines(got, "Paygate reconciled the object"); len(l) != 1 || !strings.Contains(l[0], "\tINFO\t") {
			t.Errorf("Paygate's info line: %q, want it at INFO", l)
		}
		if l := lines(got, "Paygate debug detail"); len(l) != 1 {
			t.Errorf("Paygate's debug line: %q", l)
		}
	})

	t.Run("--zap-encoder=json", func(t *testing.T) {
		var out syncBuffer
		runLoggedController(t, devLoggerFromFlags(t, &out, "--zap-encoder=json"))
		if l := lines(out.String(), "Paygate reconciled the object"); len(l) != 1 || !strings.HasPrefix(l[0], `{"level":"info"`) {
			t.Errorf("Paygate's info line: %q, want JSON", l)
		}
	})
}
