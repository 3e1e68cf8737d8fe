package stack

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A program that ends without being asked to is reported with how it ended (exit status or
// signal, and its pid), never as "exited unexpectedly: <nil>".
func TestDeathSaysWhatHappened(t *testing.T) {
	t.Parallel()
	listening := `echo '{"msg":"listening","listener":"http","addr":"127.0.0.1:1"}'`
	for name, c := range map[string]struct{ script, want string }{
		"status 0": {listening + "\nexit 0", "exited with status 0, as on a SIGTERM or SIGINT, without the launcher asking it to"},
		"status 3": {listening + "\nexit 3", "exited with status 3"},
		"SIGKILL":  {listening + "\nkill -9 $$", "was killed by SIGKILL, from outside the launcher"},
		"SIGTERM":  {listening + "\nkill -15 $$", "was killed by signal 15 (terminated)"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "fake-svc")
			if err := os.WriteFile(path, []byte("#!/bin/sh\n"+c.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			s := newStack(&lockedWriter{w: &out})
			defer func() { _ = s.Stop() }()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// Whether the exit is seen during start-up or after depends on scheduling; the
			// message says what happened either way.
			var err error
			if _, err = s.spawn(ctx, path, "fake-svc", nil, s.out, "http"); err == nil {
				select {
				case err = <-s.Died():
				case <-ctx.Done():
					t.Fatal("no death reported")
				}
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || !strings.Contains(msg, "fake-svc (pid ") || !strings.Contains(msg, "[fake-svc]") ||
				strings.Contains(msg, "<nil>") {
				t.Errorf("reported %q; want it to say %q, with the pid and where its log lines are", msg, c.want)
			}
		})
	}
}

// A taken address stops Start before anything is built or started, naming the address, its
// variable and (on Linux) the process that holds it; free ports need no check.
func TestCheckAddrsNamesTheHolder(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	free := freeAddr(t)

	if err := checkAddrs([]namedAddr{{"GATEWAY_ADDR", free}, {"ADMIN_ADDR", "127.0.0.1:0"}, {"WEBHOOKS_ADDR", "127.0.0.1:0"}}, "/nowhere/bin"); err != nil {
		t.Fatalf("free addresses: %v", err)
	}
	err = checkAddrs([]namedAddr{{"GATEWAY_ADDR", free}, {"ADMIN_ADDR", taken}}, "/nowhere/bin")
	if err == nil {
		t.Fatal("a taken ADMIN_ADDR was accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, "ADMIN_ADDR="+taken+" is already in use by ") || strings.Contains(msg, "GATEWAY_ADDR") {
		t.Errorf("message %q; want it to name ADMIN_ADDR=%s alone", msg, taken)
	}
	if runtime.GOOS == "linux" {
		exe, _ := os.Executable()
		if want := fmt.Sprintf("pid %d (%s", os.Getpid(), exe); !strings.Contains(msg, want) {
			t.Errorf("message %q; want it to name this process, %q…", msg, want)
		}
		if strings.Contains(msg, "earlier start") {
			t.Errorf("message %q calls this test a program of the stack", msg)
		}
		if err := checkAddrs([]namedAddr{{"GATEWAY_ADDR", taken}}, filepath.Dir(exe)); err == nil || !strings.Contains(err.Error(), "a program of an earlier start with this DATA_DIR") {
			t.Errorf("a holder from the stack's bin folder: %v", err)
		}
	}
	if err := checkAddrs([]namedAddr{{"GATEWAY_ADDR", free}, {"ADMIN_ADDR", free}}, "/nowhere/bin"); err == nil || !strings.Contains(err.Error(), "GATEWAY_ADDR and ADMIN_ADDR are both") {
		t.Errorf("the same address twice: %v", err)
	}
}

// freeAddr is an address on 127.0.0.1 that nothing listens on (a moment ago).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}
