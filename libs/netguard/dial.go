package netguard

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// Control is a net.Dialer Control function that refuses to connect to a blocked address. The
// dialer calls it for every connection attempt with the address it resolved, after DNS, so it
// also catches a name that resolves to an internal address and a name whose answer changes
// between the check at creation and the delivery (DNS rebinding).
func Control(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBlocked, address, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %s is not an IP address", ErrBlocked, address)
	}
	if Blocked(ip) {
		return fmt.Errorf("%w: %s is an internal address", ErrBlocked, ip)
	}
	return nil
}
