// Package faultproxy is a TCP proxy for fault tests: it listens on 127.0.0.1, forwards every
// connection to a target, and can Cut the link (every open connection closed, new ones
// refused) and Restore it, so a test can make a server such as Redis unreachable for a while
// without stopping it or losing its data.
package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy is a running proxy.
type Proxy struct {
	target string
	addr   string

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
	cut    bool
	closed bool
	total  int
	wg     sync.WaitGroup
}

// Start listens on 127.0.0.1 on a free port and forwards connections to target (host:port).
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{target: target, addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept(ln)
	return p, nil
}

// Addr is the proxy's listen address (host:port); it stays the same across Cut and Restore.
func (p *Proxy) Addr() string { return p.addr }

// Target is the address connections are forwarded to.
func (p *Proxy) Target() string { return p.target }

// Connections is the number of connections accepted and forwarded so far.
func (p *Proxy) Connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total
}

// Open is the number of forwarded connections open now (each counted once, not per side).
func (p *Proxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns) / 2
}

// Cut closes every open connection and the listener, so new connections are refused
// (ECONNREFUSED) until Restore. Cutting a cut proxy does nothing.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut || p.closed {
		return
	}
	p.cut = true
	_ = p.ln.Close()
	p.ln = nil
	for c := range p.conns {
		_ = c.Close()
		// Forgotten at once, not when its pipes notice, so Open counts only what came after.
		delete(p.conns, c)
	}
}

// IsCut reports whether the link is cut.
func (p *Proxy) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// Restore listens again on the same address and forwards new connections. Restoring a proxy
// that is not cut does nothing.
func (p *Proxy) Restore() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut || p.closed {
		return nil
	}
	// The port was ours a moment ago; it can only be busy if another program took it in
	// between, which is rare: retry briefly before giving up.
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; {
		ln, err = net.Listen("tcp", p.addr)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("faultproxy: listen again on %s: %w", p.addr, err)
	}
	p.ln = ln
	p.cut = false
	p.wg.Add(1)
	go p.accept(ln)
	return nil
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		client, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient accept error (e.g. too many open files): keep serving.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.wg.Add(1)
		go p.forward(client)
	}
}

func (p *Proxy) forward(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	p.mu.Lock()
	if p.cut || p.closed {
		p.mu.Unlock()
		_ = client.Close()
		_ = server.Close()
		return
	}
	p.conns[client] = struct{}{}
	p.conns[server] = struct{}{}
	p.total++
	p.mu.Unlock()

	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	// One direction ended (a close or a Cut): end the other too.
	_ = client.Close()
	_ = server.Close()
	<-done

	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}
