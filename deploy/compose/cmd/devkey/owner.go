package main

import (
	"os"
	"syscall"
)

// fileOwner is the user and group the kept files are given.
type fileOwner struct{ uid, gid int }

// ownerOf is the owner of path, or nil when there is none to copy (unset, unreadable).
func ownerOf(path string) *fileOwner {
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return &fileOwner{uid: int(st.Uid), gid: int(st.Gid)}
}

// give hands path to the owner, best effort: it takes root (the devkey service runs as root
// for this alone), and where Docker maps users itself (rootless, Docker Desktop) the files
// are the user's already.
func (o *fileOwner) give(path string) { _ = os.Lchown(path, o.uid, o.gid) }
