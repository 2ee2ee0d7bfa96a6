//go:build linux

package filestore

import (
	"os"
	"sync"

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

// readBack is startWriteback for a range of f written with O_DIRECT: the
// data is on the disk already, so it syncs (the disk's cache, and the
// extents), and reads the range back through r, the same file opened without
// O_DIRECT, into the page cache, where a buffered write would have left it:
// an upload is read soon after it lands (its thumbnails, its first viewers),
// and from the page cache a download runs at several GB/s, from this disk at
// about 1. Read, not POSIX_FADV_WILLNEED: the kernel fills a WILLNEED with
// single pages, a sequential read with the large folios a buffered write
// leaves, and reading 50 MiB back from single pages ran at 5.6 to 6.2 GB/s
// against 10 to 17 (a download of a file read back with WILLNEED was ~10%
// slower than of one written through the page cache). r is read in order
// from one range to the next, so its read-ahead keeps growing.
func readBack(f, r *os.File, off, n int64) error {
	bp := readBackBuffers.Get().(*[]byte)
	defer readBackBuffers.Put(bp)
	buf := *bp
	for end := off + n; off < end; {
		got, err := r.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
		if err != nil {
			return err
		}
		off += int64(got)
	}
	return control(f, unix.Fdatasync)
}

// readBackBuffers are readBack's read buffers, shared by the uploads.
var readBackBuffers = sync.Pool{New: func() any { b := make([]byte, copyBufferSize); return &b }}

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
