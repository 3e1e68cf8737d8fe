package faultproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, r *bufio.Reader, line string) (string, error) {
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	got, err := r.ReadString('\n')
	return strings.TrimSuffix(got, "\n"), err
}

func TestForwardCutRestore(t *testing.T) {
	p, err := Start(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Fatalf("addr %s", p.Addr())
	}

	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundTrip(c, r, "hello"); err != nil || got != "hello" {
		t.Fatalf("through the proxy: %q %v", got, err)
	}
	if p.Open() != 1 {
		t.Fatalf("open %d, want 1", p.Open())
	}

	p.Cut()
	p.Cut() // idempotent
	if !p.IsCut() || p.Open() != 0 {
		t.Fatalf("IsCut %v, open %d after Cut", p.IsCut(), p.Open())
	}
	// The open connection is closed…
	if _, err := roundTrip(c, r, "after cut"); err == nil {
		t.Fatal("the open connection survived the cut")
	}
	// …and new ones are refused.
	_, err = net.DialTimeout("tcp", p.Addr(), time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial while cut: %v, want connection refused", err)
	}

	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	if err := p.Restore(); err != nil { // idempotent
		t.Fatal(err)
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial after restore: %v", err)
	}
	defer c2.Close()
	if got, err := roundTrip(c2, bufio.NewReader(c2), "again"); err != nil || got != "again" {
		t.Fatalf("after restore: %q %v", got, err)
	}
	if p.Connections() != 2 {
		t.Fatalf("connections %d", p.Connections())
	}
}

func TestTargetDownClosesTheClient(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	p, err := Start(dead)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("read succeeded with the target down")
	}
}

func TestCloseEndsEverything(t *testing.T) {
	p, err := Start(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := roundTrip(c, bufio.NewReader(c), "x"); err != nil || got != "x" {
		t.Fatalf("%q %v", got, err)
	}
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked")
	}
	p.Close()
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("dial after Close succeeded")
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
}
