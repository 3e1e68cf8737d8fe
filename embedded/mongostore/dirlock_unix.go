//go:build unix

package mongostore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive lock on dir for as long as the returned file stays open: two stores
// on one directory would each keep FerretDB's metadata in memory and undo each other's writes,
// and the repair at start would take the other's half-created collections for interrupted ones.
// The kernel releases the lock when the process dies, however it dies.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, ".mongostore.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("mongostore: lock dir %q: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("mongostore: dir %q is in use by another embedded store (another `make run` or test on the same DATA_DIR?)", dir)
		}
		return nil, fmt.Errorf("mongostore: lock dir %q: %w", dir, err)
	}
	return f, nil
}
