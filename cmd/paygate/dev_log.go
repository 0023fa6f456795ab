// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build dev

package main

import (
	"strings"

	"github.com/go-logr/logr"
	uzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// `paygate dev` logs for a person at a terminal, not for a log pipeline: one readable line per
// message (the console encoder, the time of day, no caller, no stack trace on an error), Paygate's
// own messages at info, and the framework's start-up chatter (controller-runtime's "Starting
// EventSource", "Starting Controller", "Starting workers", ...) moved down to debug. --log-framework
// shows the framework's info lines again; --zap-log-level=debug shows them with Paygate's debug
// lines; the --zap-* flags override the rest. `paygate manager` and `paygate apiserver` keep
// controller-runtime's defaults: JSON, for a cluster's log collector.

// devLogDefaults sets the defaults of the dev logger on opts, before the flags are parsed, so that
// any --zap-* flag given overrides them.
func devLogDefaults(opts *zap.Options) {
	opts.NewEncoder = devConsoleEncoder
	opts.TimeEncoder = zapcore.TimeEncoderOfLayout("15:04:05.000")
	opts.StacktraceLevel = zapcore.DPanicLevel
}

// devConsoleEncoder is the console encoder without the caller (which the dev logger records only
// to tell the framework's messages apart).
func devConsoleEncoder(opts ...zap.EncoderConfigOption) zapcore.Encoder {
	cfg := uzap.NewDevelopmentEncoderConfig()
	for _, o := range opts {
		o(&cfg)
	}
	cfg.CallerKey = zapcore.OmitKey
	return zapcore.NewConsoleEncoder(cfg)
}

// newDevLogger builds the dev logger from the parsed flags: opts as set by devLogDefaults and the
// --zap-* flags; showFramework is --log-framework.
func newDevLogger(opts zap.Options, showFramework bool) logr.Logger {
	opts.ZapOpts = append(opts.ZapOpts, uzap.AddCaller(), uzap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return &frameworkCore{Core: c, show: showFramework}
	}))
	return zap.New(zap.UseFlagOptions(&opts))
}

// frameworkPackages are the function-name prefixes of the framework's code: a message logged
// from there is the framework's, whatever logger it was given (controller-runtime's controllers
// log through the manager's logger, as Paygate's reconcilers do).
var frameworkPackages = []string{"sigs.k8s.io/", "k8s.io/"}

// isFramework reports whether the entry was logged by the framework's code.
func isFramework(c zapcore.EntryCaller) bool {
	if !c.Defined {
		return false
	}
	for _, p := range frameworkPackages {
		if strings.HasPrefix(c.Function, p) {
			return true
		}
	}
	return false
}

// frameworkCore writes the framework's info messages at debug level (so that only a debug logger
// shows them), unless show. Errors are never moved. The caller, which decides, is known only
// when the entry is written, so Check lets info entries through and Write decides.
type frameworkCore struct {
	zapcore.Core
	show bool
}

func (f *frameworkCore) With(fields []zapcore.Field) zapcore.Core {
	return &frameworkCore{Core: f.Core.With(fields), show: f.show}
}

func (f *frameworkCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if f.Enabled(ent.Level) {
		return ce.AddCore(ent, f)
	}
	return ce
}

func (f *frameworkCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	if !f.show && ent.Level == zapcore.InfoLevel && isFramework(ent.Caller) {
		if !f.Core.Enabled(zapcore.DebugLevel) {
			return nil
		}
		ent.Level = zapcore.DebugLevel
	}
	return f.Core.Write(ent, fields)
}
