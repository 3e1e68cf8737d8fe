package stack

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// portHolder finds the process listening on addr, best effort: the listening socket's inode
// from /proc/net/tcp and tcp6, then the process with a descriptor on that socket in
// /proc/<pid>/fd. Processes of other users cannot be looked into unless we are root; then the
// answer is the zero holder.
func portHolder(addr string) holder {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return holder{}
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return holder{}
	}
	ip := net.ParseIP(host)
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		listeningInodes(f, ip, port, inodes)
	}
	if len(inodes) == 0 {
		return holder{}
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return holder{}
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join("/proc", p.Name())
		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
			if err != nil {
				continue
			}
			if ino, ok := strings.CutPrefix(link, "socket:["); ok && inodes[strings.TrimSuffix(ino, "]")] {
				return processOf(pid, dir)
			}
		}
	}
	return holder{}
}

func processOf(pid int, dir string) holder {
	h := holder{PID: pid}
	h.Exe, _ = os.Readlink(filepath.Join(dir, "exe"))
	if b, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil && len(b) > 0 {
		h.Command = string(bytes.TrimSpace(bytes.ReplaceAll(bytes.TrimRight(b, "\x00"), []byte{0}, []byte{' '})))
	}
	if h.Command == "" {
		b, _ := os.ReadFile(filepath.Join(dir, "comm"))
		h.Command = strings.TrimSpace(string(b))
	}
	return h
}

// listeningInodes adds to inodes the sockets of the table in file (/proc/net/tcp format) that
// listen on port at ip, or on every address (which holds ip's port too).
func listeningInodes(file string, ip net.IP, port int, inodes map[string]bool) {
	f, err := os.Open(file)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" { // 0A: TCP_LISTEN
			continue
		}
		hexIP, hexPort, ok := strings.Cut(fields[1], ":")
		if !ok {
			continue
		}
		if p, err := strconv.ParseUint(hexPort, 16, 16); err != nil || int(p) != port {
			continue
		}
		local := procIP(hexIP)
		if local == nil || !(local.IsUnspecified() || ip == nil || local.Equal(ip)) {
			continue
		}
		inodes[fields[9]] = true
	}
}

// procIP decodes an address of /proc/net/tcp{,6}: hex, in 32-bit words of host byte order
// (little-endian on every machine Go supports Linux on but s390x and big-endian MIPS/PPC,
// where a miss just means "another process").
func procIP(s string) net.IP {
	b, err := hex.DecodeString(s)
	if err != nil || (len(b) != net.IPv4len && len(b) != net.IPv6len) {
		return nil
	}
	for i := 0; i+4 <= len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	return net.IP(b)
}
