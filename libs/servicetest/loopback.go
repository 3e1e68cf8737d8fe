package servicetest

import (
	"context"
	"net"
	"os"
	"strings"
	"time"
)

// LoopbackName returns a host name other than localhost that resolves, on this machine and
// without the network, only to loopback addresses (the machine's own name, or a name from
// /etc/hosts), or "" when there is none. Tests of the SSRF guard use it: a name whose address
// is internal must be refused at dial time, and its address never shown.
func LoopbackName() string {
	var candidates []string
	if h, err := os.Hostname(); err == nil {
		candidates = append(candidates, h)
	}
	if b, err := os.ReadFile("/etc/hosts"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			line, _, _ = strings.Cut(line, "#")
			if f := strings.Fields(line); len(f) >= 2 {
				candidates = append(candidates, f[1:]...)
			}
		}
	}
	for _, name := range candidates {
		lower := strings.ToLower(strings.TrimSuffix(name, "."))
		if lower == "" || lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		addrs, err := net.DefaultResolver.LookupIPAddr(ctx, name)
		cancel()
		if err != nil || len(addrs) == 0 {
			continue
		}
		all := true
		for _, a := range addrs {
			all = all && a.IP.IsLoopback()
		}
		if all {
			return name
		}
	}
	return ""
}
