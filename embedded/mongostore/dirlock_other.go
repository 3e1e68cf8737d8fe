//go:build !unix

package mongostore

import "os"

// lockDir does not lock where flock is missing; see dirlock_unix.go for why it exists.
func lockDir(string) (*os.File, error) { return nil, nil }
