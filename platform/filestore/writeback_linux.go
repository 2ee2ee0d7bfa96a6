//go:build linux

package filestore

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback writes a range of f to the disk and makes the file's data
// durable so far (sync_file_range, SYNC_FILE_RANGE_WRITE, then fdatasync).
// syncingWriter runs it beside the upload, one at a time, so the final
// Sync, which the record waits for, finds little left to do.
//
// Why both: sync_file_range starts the range's write-back without waiting,
// but syncs nothing, and on a VM whose virtual disk caches writes the final
// fsync then waited for the host to persist the whole file: ~60 ms for
// 50 MiB whatever had already been written back (a file whose pages were all
// written and waited for, measured on the benchmark's 2-core VM), a third of
// an upload arriving at 400 MB/s. fdatasync there flushes as the upload goes:
// 50 MiB written at ~400 MB/s took 187 to 192 ms to be durable with
// sync_file_range alone and 131 to 132 ms with both (the final sync 2 ms).
// The range's write-back is started first so that the disk has it while the
// fdatasync waits for it. fdatasync, not fsync: the size and extents are
// committed all the same, the times need not be.
func startWriteback(f *os.File, off, n int64) error {
	return control(f, func(fd int) error {
		if err := unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE); err != nil {
			return err
		}
		return unix.Fdatasync(fd)
	})
}

// readBack is startWriteback for a range written with O_DIRECT: the data is
// on the disk already, so it syncs (the disk's cache, and the extents), and
// reads the range back into the page cache, where a buffered write would
// have left it: an upload is read soon after it lands (its thumbnails, its
// first viewers), and from the page cache a download runs at several GB/s,
// from this disk at about 1. The kernel is asked for the whole range first
// (POSIX_FADV_WILLNEED, readBackPiece at a time: it reads at most its
// read-ahead window of one), then a byte at the end of each piece waits for
// its read, so that the pages are in the cache when readBack returns, with
// no copy of the data out of it.
func readBack(f *os.File, off, n int64) error {
	return control(f, func(fd int) error {
		end := off + n
		for o := off; o < end; o += readBackPiece {
			if err := unix.Fadvise(fd, o, min(readBackPiece, end-o), unix.FADV_WILLNEED); err != nil {
				return err
			}
		}
		if err := waitRead(f.Name(), off, end); err != nil {
			return err
		}
		return unix.Fdatasync(fd)
	})
}

// waitRead reads the last byte of each readBackPiece of [off, end) of the
// file at path, through the page cache: f itself reads direct.
func waitRead(path string, off, end int64) error {
	r, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	var last [1]byte
	for o := off; o < end; o += readBackPiece {
		if _, err := r.ReadAt(last[:], min(o+readBackPiece, end)-1); err != nil {
			return err
		}
	}
	return nil
}

// readBackPiece is no larger than any disk's read-ahead window.
const readBackPiece = 128 << 10

// setDirect turns O_DIRECT on or off for f's later writes (F_SETFL): a file
// system without direct I/O refuses it.
func setDirect(f *os.File, on bool) error {
	return control(f, func(fd int) error {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil {
			return err
		}
		if on {
			flags |= unix.O_DIRECT
		} else {
			flags &^= unix.O_DIRECT
		}
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags)
		return err
	})
}

// control runs fn on f's descriptor.
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
