// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package chaos

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/paygate/paygate/internal/failpoint"
	"github.com/paygate/paygate/test/testenv"
)

// proc is one child process of the production binary (a manager or an apiserver), restarted as
// often as the harness likes: every incarnation logs to its own file under the run's directory.
type proc struct {
	name   string
	bin    string
	args   []string
	env    []string // added to the harness's environment (KUBECONFIG, PAYGATE_CHECKOUT_KEY, ...)
	logDir string

	// ctl is held by whoever kills and restarts the process (a kill of the harness, the
	// supervisor); held marks a process the harness keeps as it is (an armed manager).
	ctl  sync.Mutex
	held atomic.Bool

	mu      sync.Mutex
	cmd     *exec.Cmd
	gen     int
	logPath string
	armed   string // PAYGATE_FAILPOINT of the running incarnation
	done    chan struct{}
	state   *os.ProcessState
	started time.Time
}

// childEnv is the harness's environment without what must be chosen per child.
func childEnv(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, failpoint.EnvVar+"=") || strings.HasPrefix(kv, "KUBECONFIG=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

// start starts a new incarnation; armed is the PAYGATE_FAILPOINT value ("" for none).
func (p *proc) start(armed string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("%s is still running", p.name)
		}
	}
	p.gen++
	p.logPath = filepath.Join(p.logDir, fmt.Sprintf("%s.%03d.log", p.name, p.gen))
	f, err := os.Create(p.logPath)
	if err != nil {
		return err
	}
	env := p.env
	if armed != "" {
		env = append(append([]string(nil), env...), failpoint.EnvVar+"="+armed)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = childEnv(env...)
	cmd.Stdout, cmd.Stderr = f, f
	// A harness that dies takes its children with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.armed, p.state, p.started = cmd, done, armed, nil, time.Now()
	go func() {
		_ = cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.state = cmd.ProcessState
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// alive reports whether the current incarnation runs.
func (p *proc) alive() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// exited is closed when the current incarnation ends.
func (p *proc) exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return p.done
}

// kill sends SIGKILL to the current incarnation (if it runs) and waits until it is gone.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || done == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// killedBySignal reports whether the last incarnation ended with SIGKILL (its own failpoint, or
// the harness).
func (p *proc) killedBySignal() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return false
	}
	ws, ok := p.state.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func (p *proc) currentLog() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logPath
}

func (p *proc) armedWith() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.armed
}

// logContains reports whether the current incarnation's log holds s.
func (p *proc) logContains(s string) bool {
	b, err := os.ReadFile(p.currentLog())
	return err == nil && strings.Contains(string(b), s)
}

// freePort finds a loopback port nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitHealthy waits until GET url answers 200.
func waitHealthy(ctx context.Context, url string, within time.Duration) error {
	return testenv.WaitHTTP(ctx, url, within, nil)
}
