// Package healthcheck is the -healthcheck mode of every program. The images are built FROM
// scratch (docs/operations.md): no shell and no curl for Docker's HEALTHCHECK, so the program
// itself asks its own health endpoint and exits 0 or 1. It lives here, once, so that every
// program answers the same flag the same way.
package healthcheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Flag selects the mode as the first argument: "-healthcheck" asks /healthz (the process
// serves), "-healthcheck=/readyz" asks another path of the same listener (/readyz: its
// dependencies answer too).
const Flag = "-healthcheck"

// Timeout bounds the whole check. Docker's default HEALTHCHECK timeout is 30 s; a process that
// cannot answer its own /healthz over loopback within this is not healthy.
const Timeout = 3 * time.Second

// Main runs the mode when args (os.Args[1:]) ask for it and returns the exit code; ok is false
// when they do not, and the program starts as usual. The address is the one the program
// itself listens on: the variable addrVar read through getenv, or def when it is unset. An
// unspecified host (":8091", "0.0.0.0:8091", "[::]:8091") is asked on 127.0.0.1, where
// the check runs: inside the container or pod of the program.
func Main(args []string, getenv func(string) string, addrVar, def string, stderr io.Writer) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	path, isFlag := parseFlag(args[0])
	if !isFlag {
		return 0, false
	}
	if len(args) > 1 {
		fmt.Fprintf(stderr, "healthcheck: unexpected arguments %q\n", args[1:])
		return 1, true
	}
	addr := strings.TrimSpace(getenv(addrVar))
	if addr == "" {
		addr = def
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := Check(ctx, addr, path); err != nil {
		fmt.Fprintf(stderr, "healthcheck: %s (%s): %v\n", addrVar, addr, err)
		return 1, true
	}
	return 0, true
}

// parseFlag recognises the flag with one or two dashes, and its path when it has one.
func parseFlag(arg string) (path string, ok bool) {
	name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-"), "=")
	if name != Flag[1:] {
		return "", false
	}
	if !hasValue {
		return "/healthz", true
	}
	return value, true
}

// Check asks GET path on the listener at addr and succeeds on 200 alone.
func Check(ctx context.Context, addr, path string) error {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("path %q must start with /", path)
	}
	target, err := ProbeAddr(addr)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+target+path, nil)
	if err != nil {
		return err
	}
	// A transport of its own: no proxy from the environment (HTTP_PROXY must not carry a
	// check of the process's own listener elsewhere), no connection kept.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s answered %d: %s", path, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

// ProbeAddr is where a process listening on addr is reached from inside its own network
// namespace.
func ProbeAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listen address %q: %w", addr, err)
	}
	if port == "" || port == "0" {
		return "", errors.New("the listener has no fixed port to check")
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}
