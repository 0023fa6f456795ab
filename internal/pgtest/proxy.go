// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package pgtest

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
)

// Proxy is a loopback TCP proxy in front of a server, for tests that take the database away and
// bring it back: Down drops every connection and refuses new ones (as a failed-over or
// partitioned database does), Up accepts again. The server itself keeps its data.
type Proxy struct {
	// Addr is the proxy's 127.0.0.1 address.
	Addr   string
	target string

	ln    net.Listener
	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
	done  chan struct{}
}

// NewProxy listens on a free loopback port and forwards to target (host:port).
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("pgtest: proxy: %w", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]bool{}, done: make(chan struct{})}
	go p.serve()
	return p, nil
}

// DSN rewrites a DSN of the proxied server (host 127.0.0.1, its port) to go through the proxy.
func (p *Proxy) DSN(dsn string) string {
	return strings.Replace(dsn, p.target, p.Addr, 1)
}

// Down drops every open connection and refuses new ones until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Up accepts connections again.
func (p *Proxy) Up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// Close stops the proxy and drops its connections.
func (p *Proxy) Close() {
	p.Down()
	_ = p.ln.Close()
	<-p.done
}

func (p *Proxy) serve() {
	defer close(p.done)
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(in)
	}
}

func (p *Proxy) forward(in net.Conn) {
	if !p.track(in) {
		_ = in.Close()
		return
	}
	out, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(out) {
		_ = in.Close()
		if out != nil {
			_ = out.Close()
		}
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		_ = src.Close()
	}
	go pipe(out, in)
	go pipe(in, out)
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, in)
	delete(p.conns, out)
	p.mu.Unlock()
}

// track registers c unless the proxy is down.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return false
	}
	p.conns[c] = true
	return true
}
