// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"

	"github.com/paygate/paygate/apiserver"
)

// TestAPIServerOpensTheArchive: the standalone apiserver's archive flags give Options.Archive
// (nil without a DSN); a DSN that is wrong is refused without being echoed; a database that does
// not answer at start is logged, without the password, and does not stop the apiserver.
func TestAPIServerOpensTheArchive(t *testing.T) {
	const password = "pw-never-logged"
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	down := "postgres://paygate:" + password + "@127.0.0.1:1/archive?sslmode=disable&connect_timeout=2"
	for _, tc := range []struct {
		name        string
		env         string
		file        string
		maxConns    int
		wantArchive bool
		wantErr     string
		wantLog     string
	}{
		{name: "no DSN: no archive", maxConns: 8},
		{name: "from the environment, database down", env: down, maxConns: 8, wantArchive: true, wantLog: "does not answer"},
		{name: "from a file, database down", file: write("dsn", down+"\n"), maxConns: 8, wantArchive: true, wantLog: "does not answer"},
		{name: "an empty file", file: write("empty", " \n"), maxConns: 8, wantErr: "empty"},
		{name: "a missing file", file: filepath.Join(dir, "missing"), maxConns: 8, wantErr: "--archive-dsn-file"},
		{name: "too few connections", env: down, maxConns: 0, wantErr: "--archive-max-conns"},
		{name: "a DSN that does not parse", env: "postgres://paygate:" + password + "@[::1", maxConns: 8, wantErr: "cannot be parsed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvArchiveDSN, tc.env)
			var logs strings.Builder
			opts := apiserver.Options{Log: funcr.New(func(prefix, args string) { logs.WriteString(prefix + " " + args + "\n") }, funcr.Options{})}
			o := apiserverOptions{archive: archiveOptions{dsnFile: tc.file, maxConns: tc.maxConns}}
			closeArchive, err := o.openArchive(context.Background(), &opts)
			if closeArchive == nil {
				t.Fatal("openArchive returned a nil close function")
			}
			defer closeArchive()
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one about %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error: %v", err)
			case err != nil && strings.Contains(err.Error(), password):
				t.Fatalf("the error echoes the password: %v", err)
			}
			if (opts.Archive != nil) != tc.wantArchive {
				t.Errorf("Options.Archive %v, want set: %v", opts.Archive, tc.wantArchive)
			}
			if !strings.Contains(logs.String(), tc.wantLog) || strings.Contains(logs.String(), password) {
				t.Errorf("logs (want %q, never the password):\n%s", tc.wantLog, logs.String())
			}
		})
	}
}
