package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPeerConfigs renders the peer gateways' configurations and, where nginx and HAProxy are
// installed (make bench installs them), has each check its own: a configuration that does not
// load would only show when the benchmark is run.
func TestPeerConfigs(t *testing.T) {
	// A key as long as the platform's (sk_test_ and 43 characters: nginx's default map bucket
	// does not hold the header it makes).
	keys := []peerKey{{Secret: "sk_test_" + strings.Repeat("k", 43), Account: "acct_dev"}}
	for _, c := range []struct {
		name, program string
		check         func(conf, dir string) []string
	}{
		{"nginx-gateway.conf", "nginx", func(conf, dir string) []string {
			return []string{"-t", "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log")}
		}},
		{"haproxy-gateway.cfg", "haproxy", func(conf, _ string) []string { return []string{"-c", "-f", conf} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newPeerSettings(t.TempDir(), "127.0.0.1:18080", "127.0.0.1:18081", keys)
			conf, err := writePeerConfig(c.name, s)
			if err != nil {
				t.Fatal(err)
			}
			if err := writeHAProxyKeys(s); err != nil {
				t.Fatal(err)
			}
			bin := sbin(c.program)
			if bin == "" {
				t.Skipf("%s is not installed (make bench installs it)", c.program)
			}
			if out, err := exec.Command(bin, c.check(conf, s.Dir)...).CombinedOutput(); err != nil {
				t.Fatalf("%s refuses %s: %v\n%s", c.program, c.name, err, out)
			} else if strings.Contains(strings.ToLower(string(out)), "warning") {
				t.Fatalf("%s warns about %s:\n%s", c.program, c.name, out)
			}
		})
	}
}
