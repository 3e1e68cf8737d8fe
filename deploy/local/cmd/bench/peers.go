package main

// The peer gateways of the edge comparison (issue 31): nginx and HAProxy configured to do a
// gateway's job in front of the same stub service, from the configurations checked in under
// peers/. They are references the gateway is measured against, never parts of the platform.

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"text/template"
)

//go:embed peers/nginx-gateway.conf peers/haproxy-gateway.cfg
var peerConfigs embed.FS

// peerKey is one API key a peer gateway accepts, and the account it belongs to.
type peerKey struct{ Secret, Account string }

// peerSettings fill in a peer's configuration.
type peerSettings struct {
	Dir, Addr, Upstream string
	Keys                []peerKey
	// RatePerSecond is the per-key limit: far above the load, as the gateway's is, so it is
	// evaluated on every request and never refuses one.
	RatePerSecond int
	Threads       int
}

// writePeerConfig renders peers/<name> into dir/<name> and returns its path.
func writePeerConfig(name string, s peerSettings) (string, error) {
	text, err := peerConfigs.ReadFile("peers/" + name)
	if err != nil {
		return "", err
	}
	tmpl, err := template.New(name).Option("missingkey=error").Parse(string(text))
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, s); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, "logs"), 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(s.Dir, name)
	return path, os.WriteFile(path, out.Bytes(), 0o644)
}

// writeHAProxyKeys writes the map HAProxy's configuration looks the bearer key up in.
func writeHAProxyKeys(s peerSettings) error {
	var b bytes.Buffer
	for _, k := range s.Keys {
		fmt.Fprintf(&b, "%s %s\n", k.Secret, k.Account)
	}
	return os.WriteFile(filepath.Join(s.Dir, "keys.map"), b.Bytes(), 0o600)
}

// newPeerSettings are the settings both peers run with.
func newPeerSettings(dir, addr, upstream string, keys []peerKey) peerSettings {
	return peerSettings{Dir: dir, Addr: addr, Upstream: upstream, Keys: keys, RatePerSecond: 1_000_000, Threads: runtime.NumCPU()}
}

// checkGatewayJob makes sure a server measured as a gateway does the job: 401 without a key
// and with an unknown one, 200 with the key, and a request id on the answer. A peer that
// forwarded everything would be measured doing less than the gateway does.
func checkGatewayJob(ctx context.Context, name, url, key string) error {
	for _, c := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer sk_test_unknown", http.StatusUnauthorized}, {"Bearer " + key, http.StatusOK}} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want || resp.Header.Get("Request-Id") == "" {
			return fmt.Errorf("%s answers %d (Request-Id %q) with Authorization %q, want %d and a request id",
				name, resp.StatusCode, resp.Header.Get("Request-Id"), c.auth, c.want)
		}
	}
	return nil
}
