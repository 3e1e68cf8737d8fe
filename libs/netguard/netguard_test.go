package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"
	"time"
)

func TestCheckHost(t *testing.T) {
	refused := []string{
		// loopback, every way it can be written
		"127.0.0.1", "127.1", "127.0.1", "127.255.255.254", "2130706433", "0x7f000001", "0X7F000001",
		"017700000001", "0177.0.0.1", "0x7f.0.0.1", "0x7f.1", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1",
		"::ffff:7f00:1", "0:0:0:0:0:ffff:7f00:0001", "::127.0.0.1",
		"localhost", "LOCALHOST", "localhost.", "api.localhost", "a.b.LocalHost.",
		// unspecified
		"0.0.0.0", "0", "0x", "::", "0.0.0.1",
		// private
		"10.0.0.1", "10.255.255.255", "012.0.0.1", "167772161", "172.16.0.1", "172.31.255.255",
		"192.168.1.1", "::ffff:10.1.2.3", "::ffff:192.168.0.1",
		// link-local and cloud metadata
		"169.254.169.254", "169.254.0.1", "2852039166", "0xa9fea9fe", "fe80::1", "fe80::1%eth0", "febf::1",
		"::ffff:169.254.169.254",
		// CGNAT
		"100.64.0.1", "100.127.255.254",
		// unique local, site-local
		"fc00::1", "fd12:3456::1", "fec0::1",
		// multicast, broadcast, reserved
		"224.0.0.1", "239.255.255.250", "ff02::1", "ff0e::1", "255.255.255.255", "240.0.0.1",
		// IPv6 embedding an internal IPv4
		"64:ff9b::7f00:1", "64:ff9b::a00:1", "2002:7f00:1::", "2002:a9fe:a9fe::1",
	}
	for _, h := range refused {
		if err := CheckHost(h); !errors.Is(err, ErrBlocked) {
			t.Errorf("CheckHost(%q) = %v, want refused", h, err)
		}
	}
	allowed := []string{
		"example.com", "hooks.example.com", "8.8.8.8", "1.1.1.1", "134744072" /* 8.8.8.8 */, "0x08080808",
		"2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
		"172.32.0.1", "172.15.255.255", "100.63.255.255", "100.128.0.1", "192.169.0.1", "169.255.0.1",
		"localhost.example.com", "mylocalhost", "xn--localhost", "127.0.0.1.example.com",
		// not a number: a name
		"1.2.3.4.5", "08.1.1.1", "1.2.3.256",
	}
	for _, h := range allowed {
		if err := CheckHost(h); err != nil {
			t.Errorf("CheckHost(%q) = %v, want allowed", h, err)
		}
	}
	if err := CheckHost(""); err == nil {
		t.Error("empty host allowed")
	}
}

func TestParseLiteral(t *testing.T) {
	for in, want := range map[string]string{
		"2130706433":     "127.0.0.1",
		"0x7f000001":     "127.0.0.1",
		"017700000001":   "127.0.0.1",
		"127.1":          "127.0.0.1",
		"10.1.2":         "10.1.0.2",
		"0xc0.0250.1":    "192.168.0.1",
		"1.2.3.4":        "1.2.3.4",
		"::ffff:1.2.3.4": "::ffff:1.2.3.4",
	} {
		got, ok := ParseLiteral(in)
		if !ok || got != netip.MustParseAddr(want) {
			t.Errorf("ParseLiteral(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"example.com", "1.2.3.4.5", "256.1.1.1", "1.2.65536", "4294967296", "08", "-1", "1..2", "+1"} {
		if got, ok := ParseLiteral(in); ok {
			t.Errorf("ParseLiteral(%q) = %v, want not a literal", in, got)
		}
	}
}

func TestControl(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:443", false}, {"[::1]:443", false}, {"[::ffff:127.0.0.1]:80", false},
		{"169.254.169.254:80", false}, {"10.0.0.1:443", false}, {"[fe80::1%eth0]:443", false},
		{"8.8.8.8:443", true}, {"[2606:4700:4700::1111]:443", true},
		{"not-an-address", false}, {"example.com:443", false},
	} {
		err := Control("tcp", tc.addr, nil)
		if (err == nil) != tc.ok {
			t.Errorf("Control(%q) = %v, want ok=%v", tc.addr, err, tc.ok)
		}
	}
}

// The dialer check catches a name that resolves to loopback, which the URL check cannot see.
func TestDialerRefusesResolvedLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	_, port, _ := net.SplitHostPort(u.Host)
	d := &net.Dialer{Timeout: 2 * time.Second, Control: Control}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	res, err := client.Get("http://localhost:" + port + "/")
	if err == nil {
		res.Body.Close()
		t.Fatal("connected to localhost through the guarded dialer")
	}
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("err = %v, want ErrBlocked", err)
	}
	// Without the guard the same request goes through, so the refusal above is the guard's.
	plain := &net.Dialer{Timeout: 2 * time.Second}
	conn, err := plain.DialContext(context.Background(), "tcp", "localhost:"+port)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
}

func FuzzCheckHost(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "2130706433", "0x7f.1", "::ffff:127.0.0.1", "example.com", "localhost", "fe80::1%en0", "1.2.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		err := CheckHost(host)
		// Whatever the form, a literal that parses to a blocked address is refused, and the
		// numeric parser agrees with the standard one on every dotted quad it accepts.
		if ip, ok := ParseLiteral(host); ok {
			if Blocked(ip) && err == nil {
				t.Fatalf("CheckHost(%q) allowed %s", host, ip)
			}
			if std, err := netip.ParseAddr(host); err == nil && std != ip {
				t.Fatalf("ParseLiteral(%q) = %s, netip says %s", host, ip, std)
			}
		}
		if ip, perr := netip.ParseAddr(host); perr == nil && Blocked(ip) && err == nil {
			t.Fatalf("CheckHost(%q) allowed a blocked address", host)
		}
	})
}
