// Package netguard keeps webhook deliveries away from the platform's own network (SSRF): it
// refuses URLs whose host is a private, loopback, link-local or otherwise internal address
// written as a literal (in any of the forms resolvers accept) or the name localhost, and it
// checks every address a connection is actually made to, after DNS, so a name that resolves
// (or later rebinds) to an internal address is refused too.
package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ErrBlocked is wrapped by every refusal.
var ErrBlocked = errors.New("address not allowed")

// blocked are the ranges a delivery must never reach. IPv4-mapped IPv6 addresses are unmapped
// before the check, and IPv6 forms that embed an IPv4 address (NAT64, 6to4) are checked by the
// address they embed.
var blocked = mustPrefixes(
	// IPv4
	"0.0.0.0/8",       // "this network", includes the unspecified 0.0.0.0
	"10.0.0.0/8",      // private
	"100.64.0.0/10",   // carrier-grade NAT
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local, includes cloud metadata 169.254.169.254
	"172.16.0.0/12",   // private
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // TEST-NET-1
	"192.168.0.0/16",  // private
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // TEST-NET-2
	"203.0.113.0/24",  // TEST-NET-3
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, includes broadcast 255.255.255.255
	// IPv6
	"::/128",        // unspecified
	"::1/128",       // loopback
	"::/96",         // IPv4-compatible (deprecated); ::a.b.c.d
	"100::/64",      // discard-only
	"2001:db8::/32", // documentation
	"fc00::/7",      // unique local
	"fe80::/10",     // link-local
	"fec0::/10",     // site-local (deprecated)
	"ff00::/8",      // multicast
)

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4  = netip.MustParsePrefix("2002::/16")
	mapped4 = netip.MustParsePrefix("::ffff:0:0/96")
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Blocked reports whether a connection to ip must be refused.
func Blocked(ip netip.Addr) bool {
	if !ip.IsValid() {
		return true
	}
	ip = ip.WithZone("")
	if mapped4.Contains(ip) {
		ip = ip.Unmap()
	}
	for _, p := range blocked {
		if p.Contains(ip) {
			return true
		}
	}
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip):
			return Blocked(netip.AddrFrom4([4]byte(b[12:16])))
		case sixTo4.Contains(ip):
			return Blocked(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	return false
}

// CheckHost refuses a URL host (as url.URL.Hostname returns it: no port, no brackets) that is
// an internal address written as a literal, or localhost. Names are otherwise allowed here;
// where they lead is checked when connecting (see Control).
func CheckHost(host string) error {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "" {
		return fmt.Errorf("%w: empty host", ErrBlocked)
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return fmt.Errorf("%w: %s is a local name", ErrBlocked, host)
	}
	// Both the host as given and without its trailing dot: an IPv6 zone may end in a dot.
	for _, s := range []string{host, h} {
		if ip, ok := ParseLiteral(s); ok && Blocked(ip) {
			return fmt.Errorf("%w: %s is an internal address", ErrBlocked, host)
		}
	}
	return nil
}

// ParseLiteral parses host as an IP address in any form a resolver might accept: IPv6 (with or
// without a zone), dotted-quad IPv4, and the inet_aton forms with fewer parts and decimal,
// octal (leading 0) or hexadecimal (0x) parts, such as 2130706433, 0x7f000001, 017700000001
// and 127.1, all of which are 127.0.0.1 to getaddrinfo.
func ParseLiteral(host string) (netip.Addr, bool) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip, true
	}
	return parseInetAton(host)
}

func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := parseAtonPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	// a, a.b, a.b.c, a.b.c.d: every part but the last is one byte; the last fills the rest.
	last := len(vals) - 1
	for _, v := range vals[:last] {
		if v > 0xff {
			return netip.Addr{}, false
		}
	}
	if vals[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	var n uint32
	for i, v := range vals[:last] {
		n |= uint32(v) << (24 - 8*i)
	}
	n |= uint32(vals[last])
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

func parseAtonPart(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(p) > 1 && (p[:2] == "0x" || p[:2] == "0X"):
		base, p = 16, p[2:]
		if p == "" {
			return 0, true // "0x" alone is 0 to inet_aton
		}
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	v, err := strconv.ParseUint(p, base, 32)
	if err != nil {
		return 0, false
	}
	return v, true
}
