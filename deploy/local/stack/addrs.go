package stack

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"syscall"
)

// namedAddr is a listen address and the variable it came from, for the messages.
type namedAddr struct{ Var, Addr string }

// checkAddrs fails, before anything is built or started, when an address the user chose is
// taken, naming what holds it where the system says (Linux: pid and command line). Starting
// anyway would build for a minute and then have one program die with "address already in
// use", the others left running until the launcher noticed. It never stops the holder: it
// may not be ours. A free port (":0") needs no check.
func checkAddrs(addrs []namedAddr, binDir string) error {
	seen := map[string]string{}
	var errs []error
	for _, a := range addrs {
		_, port, err := net.SplitHostPort(a.Addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%s: %w", a.Var, a.Addr, err))
			continue
		}
		if port == "0" {
			continue
		}
		if other, ok := seen[a.Addr]; ok {
			errs = append(errs, fmt.Errorf("%s and %s are both %s: give each program its own address", other, a.Var, a.Addr))
			continue
		}
		seen[a.Addr] = a.Var
		ln, err := net.Listen("tcp", a.Addr)
		if err == nil {
			_ = ln.Close()
			continue
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			errs = append(errs, fmt.Errorf("%s=%s cannot be listened on: %w", a.Var, a.Addr, err))
			continue
		}
		errs = append(errs, fmt.Errorf("%s=%s is already in use by %s: stop it, or set %s to another address",
			a.Var, a.Addr, describeHolder(portHolder(a.Addr), binDir), a.Var))
	}
	return errors.Join(errs...)
}

// holder is a process holding a port, as far as the system tells.
type holder struct {
	PID     int
	Command string // its command line
	Exe     string // the path of its executable
}

// describeHolder names the holder, and says so when it is a program of an earlier start with
// the same data folder (one that outlived its launcher, before launchers took their programs
// with them).
func describeHolder(h holder, binDir string) string {
	if h.PID == 0 {
		return "another process (the system does not say which)"
	}
	s := fmt.Sprintf("pid %d (%s)", h.PID, h.Command)
	if h.Exe != "" && strings.HasPrefix(h.Exe, filepath.Clean(binDir)+string(filepath.Separator)) {
		s += ", a program of an earlier start with this DATA_DIR"
	}
	return s
}
