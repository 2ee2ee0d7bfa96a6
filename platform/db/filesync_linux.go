//go:build linux

package db

import (
	"os"
	"strconv"
	"syscall"
)

// sync fsyncs the database file through a descriptor SQLite itself holds on
// it, found in /proc/self/fd (the last one found is tried first). It opens
// no descriptor of its own on purpose: closing any descriptor of a file
// drops every POSIX lock the process holds on it, SQLite's included, and
// another process (a replica on the same file, the CLI) could then take the
// file's exclusive lock, which a closing connection uses to decide that it
// may delete the WAL. It answers whether a descriptor was found and synced.
func (f *dbFile) sync() bool {
	if f.path == "" {
		return false
	}
	want, err := os.Stat(f.path)
	if err != nil {
		return false
	}
	if f.fd >= 0 && sameFile(f.fd, want) && syscall.Fsync(f.fd) == nil {
		f.synced.Add(1)
		return true
	}
	f.fd = -1
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return false
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		// SQLite may close fd, and the number be given to another file,
		// between the check and the fsync: that fsync is then merely
		// wasted (or fails), and changes nothing.
		if err != nil || !sameFile(fd, want) || syscall.Fsync(fd) != nil {
			continue
		}
		f.fd = fd
		f.synced.Add(1)
		return true
	}
	return false
}

// sameFile tells whether the descriptor fd is open on the file want.
func sameFile(fd int, want os.FileInfo) bool {
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return false
	}
	w, ok := want.Sys().(*syscall.Stat_t)
	return ok && st.Dev == w.Dev && st.Ino == w.Ino
}
