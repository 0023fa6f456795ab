// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := StopShared(); err != nil && code == 0 {
		code = 1
	}
	os.Exit(code)
}

func TestFindBinariesPrefersNewestVersion(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"9.6", "13", "15", "16"} {
		dir := filepath.Join(root, v, "bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		names := []string{"initdb", "postgres"}
		if v == "16" {
			names = names[:1] // incomplete: no postgres
		}
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	old := searchRoot
	searchRoot = root
	t.Cleanup(func() { searchRoot = old })
	t.Setenv("PATH", t.TempDir())
	got, err := FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "15", "bin"); got != want {
		t.Fatalf("FindBinaries = %s, want %s", got, want)
	}
	searchRoot = filepath.Join(root, "missing")
	if _, err := FindBinaries(); err != ErrNoBinaries {
		t.Fatalf("FindBinaries without binaries = %v, want ErrNoBinaries", err)
	}
}

func TestServerStartsAcceptsConnectionsAndStops(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	var one int
	var fsync string
	if err := conn.QueryRow(ctx, "SELECT 1, current_setting('fsync')").Scan(&one, &fsync); err != nil {
		t.Fatal(err)
	}
	if one != 1 || fsync != "off" {
		t.Fatalf("got %d, fsync %s", one, fsync)
	}
	_ = conn.Close(ctx)

	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Fatalf("the directory %s is still there: %v", s.Dir, err)
	}
	if _, err := pgx.Connect(ctx, s.DSN); err == nil {
		t.Fatal("connected to a stopped server")
	}
	if err := s.Stop(); err != nil { // again, as the cleanup does
		t.Fatal(err)
	}
}

func TestNewDatabaseGivesEachTestItsOwnDatabase(t *testing.T) {
	ctx := context.Background()
	a, b := NewDatabase(t), NewDatabase(t)
	if a == b {
		t.Fatalf("two databases with one DSN %s", a)
	}
	for _, dsn := range []string{a, b} {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE t (x int)"); err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		_ = conn.Close(ctx)
	}
}
