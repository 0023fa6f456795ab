// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package pgtest starts a throwaway, real PostgreSQL server for tests, the way envtest starts
// etcd: Debian's initdb and postgres binaries (hack/install-postgres.sh installs them) on a
// temporary directory and a free loopback port. There is no mock database.
//
// Without the binaries a test that asks for a server is skipped with the reason, except when the
// environment variable CI is "true": CI installs them, so there their absence fails the test.
//
// PostgreSQL refuses to run as root. When the tests run as root (as in CI and on the developers'
// machines), initdb and postgres run as the unprivileged user "nobody", owning the temporary
// directory.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoBinaries reports that initdb or postgres could not be found.
var ErrNoBinaries = errors.New("pgtest: PostgreSQL server binaries (initdb, postgres) not found on PATH or under /usr/lib/postgresql/*/bin; run hack/install-postgres.sh")

// searchRoot is where Debian installs the server binaries of each major version.
var searchRoot = "/usr/lib/postgresql"

// FindBinaries returns the directory holding initdb and postgres: the one on PATH if both are
// there, else the newest /usr/lib/postgresql/<major>/bin that has both.
func FindBinaries() (string, error) {
	if initdb, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(initdb)
		if isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	entries, err := os.ReadDir(searchRoot)
	if err != nil {
		return "", ErrNoBinaries
	}
	var majors []float64
	dirs := map[float64]string{}
	for _, e := range entries {
		v, err := strconv.ParseFloat(e.Name(), 64) // "15", "9.6"
		if err != nil {
			continue
		}
		dir := filepath.Join(searchRoot, e.Name(), "bin")
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			majors = append(majors, v)
			dirs[v] = dir
		}
	}
	if len(majors) == 0 {
		return "", ErrNoBinaries
	}
	return dirs[slices.Max(majors)], nil
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// SkipOrFail skips t because of err (the binaries are missing), or fails it when CI is "true".
func SkipOrFail(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%v (CI=true: CI installs PostgreSQL, so its absence is a failure)", err)
	}
	t.Skipf("skipping: %v", err)
}

// Server is a running PostgreSQL server on a temporary directory.
type Server struct {
	// DSN connects to the server's "postgres" database as the superuser "postgres" (trust
	// authentication, loopback only, no TLS).
	DSN string
	// Port is the TCP port on 127.0.0.1.
	Port int
	// Dir is the temporary directory: data/, the socket directory sock/ and postgres.log.
	Dir string

	cmd      *exec.Cmd
	keep     bool // Stop leaves Dir (StartServerIn)
	exited   chan struct{}
	stopOnce sync.Once
	stopErr  error
}

// Start starts a server for t and stops it when t ends. It skips t (fails it under CI=true) when
// the binaries are missing, and fails t when the server does not start.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := StartServer()
	if errors.Is(err, ErrNoBinaries) {
		SkipOrFail(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping PostgreSQL: %v", err)
		}
	})
	return s
}

// StartServer starts a server; the caller stops it with Stop. It returns an error wrapping
// ErrNoBinaries when the binaries are missing.
func StartServer() (*Server, error) {
	if _, err := FindBinaries(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s, err := start(dir)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	return s, nil
}

// StartServerIn starts a server whose directory is dir (created when missing; the local control
// plane of `paygate dev` keeps it under its state directory). Stop leaves dir in place.
func StartServerIn(dir string) (*Server, error) {
	if _, err := FindBinaries(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := traversable(dir); err != nil {
		return nil, err
	}
	s, err := start(dir)
	if err != nil {
		return nil, err
	}
	s.keep = true
	return s, nil
}

// traversable lets the unprivileged user PostgreSQL runs as when we are root reach dir: each
// ancestor lacking search permission for others gets it (search only: nothing becomes listable
// or readable).
func traversable(dir string) error {
	if cred, err := credential(); err != nil || cred == nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(p, fi.Mode().Perm()|0o001); err != nil {
				return fmt.Errorf("pgtest: letting PostgreSQL's user reach %s: %w", dir, err)
			}
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

func start(dir string) (*Server, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	cleanup := func(e error) (*Server, error) { return nil, e }
	// The unprivileged user must reach the directory: MkdirTemp makes it 0700 for root.
	if err := os.Chmod(dir, 0o755); err != nil {
		return cleanup(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sock"), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return cleanup(err)
	}
	if cred != nil {
		if err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, int(cred.Uid), int(cred.Gid))
		}); err != nil {
			return cleanup(fmt.Errorf("pgtest: handing %s to the unprivileged user: %w", dir, err))
		}
	}

	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err == nil {
		return startRetrying(bin, dir, cred) // a kept directory: its data as it was
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = sysProcAttr(cred)
	initdb.Env = childEnv()
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return cleanup(fmt.Errorf("pgtest: initdb: %w\n%s", err, out))
	}

	return startRetrying(bin, dir, cred)
}

func startRetrying(bin, dir string, cred *syscall.Credential) (*Server, error) {
	// A free port can be taken between choosing it and postgres binding it: try a few.
	var lastErr error
	for range 3 {
		s, err := startPostgres(bin, dir, cred)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startPostgres(bin, dir string, cred *syscall.Credential) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "postgres.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", filepath.Join(dir, "data"),
		"-p", strconv.Itoa(port),
		"-k", filepath.Join(dir, "sock"),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=100",
		"-c", "shared_buffers=16MB",
		"-c", "dynamic_shared_memory_type=mmap",
		"-c", "log_min_messages=warning",
	)
	cmd.SysProcAttr = sysProcAttr(cred)
	cmd.Env = childEnv()
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pgtest: starting postgres: %w", err)
	}
	s := &Server{
		DSN:    fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		Port:   port,
		Dir:    dir,
		cmd:    cmd,
		exited: make(chan struct{}),
	}
	go func() { _ = cmd.Wait(); close(s.exited) }()

	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.DSN)
		if err == nil {
			err = conn.Ping(ctx)
			_ = conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.exited:
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("pgtest: postgres exited before accepting connections:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			s.kill()
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("pgtest: postgres did not accept connections within 60s: %v\n%s", err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill stops postgres: an immediate shutdown (SIGQUIT), then SIGKILL to its process group if it
// has not exited within 10 seconds.
func (s *Server) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
}

// Stop kills the server and removes its directory. It may be called more than once (a test that
// takes the database down mid-test, then the cleanup).
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.kill()
		if !s.keep {
			s.stopErr = os.RemoveAll(s.Dir)
		}
	})
	return s.stopErr
}

// Log returns what the server logged so far (warnings and errors).
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "postgres.log"))
	return string(b)
}

// NewDatabase creates an empty database with a unique name and returns its DSN. Tests that
// share one server each take their own database.
func (s *Server) NewDatabase(ctx context.Context) (string, error) {
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	name := fmt.Sprintf("test_%d", dbCounter.Add())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return strings.Replace(s.DSN, "/postgres?", "/"+name+"?", 1), nil
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) Add() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

var dbCounter counter

var shared struct {
	mu  sync.Mutex
	srv *Server
	err error
}

// NewDatabase returns the DSN of a new, empty database on a server shared by the tests of the
// package, started on first use. It skips t (fails it under CI=true) without the binaries. Stop
// the shared server with StopShared from TestMain.
func NewDatabase(t testing.TB) string {
	t.Helper()
	shared.mu.Lock()
	if shared.srv == nil && shared.err == nil {
		shared.srv, shared.err = StartServer()
	}
	srv, err := shared.srv, shared.err
	shared.mu.Unlock()
	if errors.Is(err, ErrNoBinaries) {
		SkipOrFail(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, err := srv.NewDatabase(ctx)
	if err != nil {
		t.Fatalf("creating a database: %v\n%s", err, srv.Log())
	}
	return dsn
}

// StopShared stops the server NewDatabase started, if any.
func StopShared() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv == nil {
		return nil
	}
	err := shared.srv.Stop()
	shared.srv, shared.err = nil, nil
	return err
}

// credential is who initdb and postgres run as: nil (the current user) unless that is root,
// then "nobody".
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and PostgreSQL refuses root: no user nobody to run it as: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// childEnv is the environment of initdb and postgres: no locale fuss, no HOME of root's.
func childEnv() []string {
	env := []string{"LC_ALL=C", "LANG=C", "TZ=UTC"}
	if p := os.Getenv("PATH"); p != "" {
		env = append(env, "PATH="+p)
	}
	return env
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
