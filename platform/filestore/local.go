package filestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
	"unsafe"
)

// tmpDir is the folder of uploads in progress inside the local root. It is on
// the same file system as the objects, so that committing is a rename.
const tmpDir = ".tmp"

// copyBufferSize is the copy buffer of one upload: the memory it holds.
const copyBufferSize = 256 << 10

// writerOnly hides os.File's ReadFrom, so that io.CopyBuffer uses the buffer.
type writerOnly struct{ io.Writer }

// syncEvery is how much of an upload is written between two starts of its
// write-back (syncingWriter).
const syncEvery = 2 << 20

// directBlock is the alignment direct I/O asks of a write's memory, length
// and file offset (the logical block size of any disk, 4 KiB at most).
const directBlock = 4096

// syncingWriter writes an upload to its file and, each time syncEvery more
// bytes are written, starts writing those to the disk in the background
// (startWriteback, one at a time). The disk then takes the file while the
// rest arrives, and the final Sync, which the record waits for, has only the
// tail left to flush: durability is the same (nothing is recorded before
// that Sync), the wait at the end is shorter. An error of a background start
// is kept and answered by wait (on Linux an fsync error is reported once, so
// a later Sync may not see it again). It hides os.File's ReadFrom, so that
// io.CopyBuffer uses the buffer (or the body's WriteTo).
//
// Where the file system takes it, the upload is written with O_DIRECT
// (direct): on the benchmark's VM (ext4 on a virtual disk) the page cache's
// write-back made a 50 MiB file durable at 330 to 410 MB/s, whatever the
// size of the ranges started, while the same bytes written direct and
// fdatasynced took 1.5 to 2.2 GB/s, so a durable upload ran at the disk's
// write-back speed, below what the network brings. Direct writes need whole
// blocks from aligned memory: the body's chunks (WriteTo) are, and any other
// write is gathered in stage first; the last partial block goes through the
// page cache (finish). The background start then reads each range back into
// the page cache (readBack).
type syncingWriter struct {
	f *os.File
	// start starts the write-back of a range of f: startWriteback, readBack
	// (through back) when direct, or a test's recorder.
	start   func(f *os.File, off, n int64) error
	direct  bool
	back    *os.File      // direct: f opened again without O_DIRECT, for readBack; finish closes it
	stage   []byte        // direct: the bytes of a block not yet whole, in aligned memory
	written int64         // bytes written to f
	pending int64         // of which not yet handed to start
	running chan struct{} // closed when the background start ends; nil before the first
	err     error         // the background starts' first error, read after running is closed
}

func newSyncingWriter(f *os.File) *syncingWriter {
	if back, err := os.Open(f.Name()); err == nil {
		if setDirect(f, true) == nil {
			start := func(f *os.File, off, n int64) error { return readBack(f, back, off, n) }
			return &syncingWriter{f: f, start: start, direct: true, back: back}
		}
		_ = back.Close()
	}
	return &syncingWriter{f: f, start: startWriteback}
}

func (w *syncingWriter) Write(p []byte) (int, error) {
	if !w.direct {
		return w.put(p)
	}
	done := 0
	for done < len(p) {
		rest := p[done:]
		if len(w.stage) == 0 && len(rest) >= directBlock && isAligned(rest) {
			n, err := w.put(rest[:len(rest)&^(directBlock-1)])
			done += n
			if err != nil {
				return done, err
			}
			continue
		}
		if w.stage == nil {
			w.stage = alignedBuffer(copyBufferSize)[:0]
		}
		n := copy(w.stage[len(w.stage):cap(w.stage)], rest)
		w.stage = w.stage[:len(w.stage)+n]
		done += n
		if len(w.stage) == cap(w.stage) {
			if _, err := w.put(w.stage); err != nil {
				return done, err
			}
			w.stage = w.stage[:0]
		}
	}
	return len(p), nil
}

// finish ends the writes: what stage holds goes to the file (flushStage;
// the final Sync writes a partial block back), the background start is
// waited for, and, direct, what was written since is read back too. After a
// failed copy (failed) it only waits: the file is removed, so nothing more
// is written or read back. The writer takes no write after.
func (w *syncingWriter) finish(failed bool) error {
	if w.back != nil {
		defer func() { _ = w.back.Close() }()
	}
	var err error
	if !failed {
		err = w.flushStage()
	}
	if werr := w.wait(); err == nil {
		err = werr
	}
	if err == nil && !failed && w.direct && w.pending > 0 {
		err = w.start(w.f, w.written-w.pending, w.pending)
		w.pending = 0
	}
	return err
}

// flushStage writes what stage holds: the whole blocks direct, then, with
// O_DIRECT off, the rest.
func (w *syncingWriter) flushStage() error {
	if len(w.stage) == 0 {
		return nil
	}
	whole := len(w.stage) &^ (directBlock - 1)
	if _, err := w.put(w.stage[:whole]); err != nil {
		return err
	}
	if err := setDirect(w.f, false); err != nil {
		return err
	}
	_, err := w.put(w.stage[whole:])
	w.stage = w.stage[:0]
	return err
}

// put writes p to f and starts the write-back of what was written since the
// last start once that is syncEvery or more and no start is running.
func (w *syncingWriter) put(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.written += int64(n)
	w.pending += int64(n)
	if w.pending >= syncEvery && w.idle() {
		off, size := w.written-w.pending, w.pending
		w.pending = 0
		done := make(chan struct{})
		w.running = done
		go func() {
			defer close(done)
			if err := w.start(w.f, off, size); err != nil && w.err == nil {
				w.err = err
			}
		}()
	}
	return n, err
}

// idle tells that no background sync is running.
func (w *syncingWriter) idle() bool {
	if w.running == nil {
		return true
	}
	select {
	case <-w.running:
		return true
	default:
		return false
	}
}

// wait waits for the background sync and answers the first error of any.
func (w *syncingWriter) wait() error {
	if w.running != nil {
		<-w.running
	}
	return w.err
}

// alignedBuffer answers n bytes starting at a multiple of directBlock.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+directBlock)
	skip := (directBlock - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%directBlock)) % directBlock
	return b[skip : skip+n : skip+n]
}

// isAligned tells whether p starts at a multiple of directBlock.
func isAligned(p []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(p)))%directBlock == 0
}

// Local keeps objects as files under a root directory.
type Local struct {
	root string
}

// NewLocal returns a store rooted at dir, creating it when needed. Uploads
// a crash left in its temporary folder are removed by the sweeper
// (Service.RunSweeper), whose first sweep runs as the server starts.
func NewLocal(dir string) (*Local, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(root, tmpDir), 0o750); err != nil {
		return nil, fmt.Errorf("create file store directory: %w", err)
	}
	return &Local{root: root}, nil
}

// Root returns the directory the store writes into.
func (l *Local) Root() string { return l.root }

// SweepUploads removes the temporary files of uploads last written before
// cutoff. Replicas sharing the directory may sweep at the same moment: a
// file already gone is not an error. A file an upload is still writing is
// never that old (see SweepAge), whichever replica writes it.
func (l *Local) SweepUploads(ctx context.Context, cutoff time.Time) (Swept, error) {
	dir := filepath.Join(l.root, tmpDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Swept{}, fmt.Errorf("list %s: %w", dir, err)
	}
	var got Swept
	for _, e := range entries {
		if ctx.Err() != nil {
			return got, ctx.Err()
		}
		info, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue // committed or swept meanwhile
		}
		if err != nil {
			return got, err
		}
		if !info.Mode().IsRegular() || !info.ModTime().Before(cutoff) {
			continue
		}
		err = os.Remove(filepath.Join(dir, e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return got, err
		}
		got.Count++
		got.Bytes += info.Size()
	}
	return got, nil
}

func (l *Local) path(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return filepath.Join(l.root, filepath.FromSlash(key)), nil
}

// Put writes r to a temporary file, syncs it and renames it into place, so
// that readers never see a partial object and a failed upload leaves nothing.
func (l *Local) Put(_ context.Context, key string, r io.Reader) (n int64, err error) {
	dst, err := l.path(key)
	if err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(filepath.Join(l.root, tmpDir), "upload-*")
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	// Each read of the body is written as soon as it arrives, never held
	// back in a buffer (written direct, a chunk of the body's pipeline waits
	// only for its last partial block, kept for the end): the file's
	// modification time then shows that the upload is alive, which is what
	// keeps the sweeper off it (SweepAge).
	// (os.File's ReadFrom did the same behind the bufio.Writer this
	// replaces; this says so instead of relying on it.)
	w := newSyncingWriter(f)
	n, err = io.CopyBuffer(w, r, make([]byte, copyBufferSize))
	if ferr := w.finish(err != nil); err == nil {
		err = ferr
	}
	if err != nil {
		return n, err
	}
	if err = f.Sync(); err != nil {
		return n, err
	}
	if err = f.Close(); err != nil {
		return n, err
	}
	if err = os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return n, err
	}
	if err = os.Rename(f.Name(), dst); err != nil {
		return n, err
	}
	return n, nil
}

// Open opens the file at offset.
func (l *Local) Open(_ context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	p, err := l.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotExist
	}
	if err != nil {
		return nil, err
	}
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	if length < 0 {
		return f, nil
	}
	return readCloser{Reader: io.LimitReader(f, length), Closer: f}, nil
}

// Stat answers the file's size.
func (l *Local) Stat(_ context.Context, key string) (int64, error) {
	p, err := l.path(key)
	if err != nil {
		return 0, err
	}
	st, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return 0, ErrNotExist
	}
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Delete removes the file.
func (l *Local) Delete(_ context.Context, key string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Ping checks that the root is still a directory.
func (l *Local) Ping(context.Context) error {
	st, err := os.Stat(l.root)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("file store root %s is not a directory", l.root)
	}
	return nil
}

// Append writes r at offset of key (appender): the file is cut back to
// offset first, so that what a failed or abandoned write left past it goes,
// written as the body arrives, synced before it answers (an offset a client
// is told survives a crash), and cut back to offset again when r or the disk
// fails. A file shorter than offset answers ErrShort.
func (l *Local) Append(ctx context.Context, key string, offset int64, r io.Reader) (n int64, err error) {
	p, err := l.path(key)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return 0, err
	}
	flag := os.O_WRONLY
	if offset == 0 {
		flag |= os.O_CREATE
	}
	f, err := os.OpenFile(p, flag, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		return 0, ErrShort
	}
	if err != nil {
		return 0, err
	}
	// Cut back only once the file is known to reach the offset: a short
	// one must not be padded with zeros.
	cut := false
	defer func() {
		if err != nil && cut {
			_ = f.Truncate(offset)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if st.Size() < offset {
		return 0, ErrShort
	}
	cut = true
	if err = f.Truncate(offset); err != nil {
		return 0, err
	}
	if _, err = f.Seek(offset, io.SeekStart); err != nil {
		return 0, err
	}
	// The context is checked between reads: a writer whose lease ran out
	// stops before another may take the upload over.
	if n, err = io.CopyBuffer(writerOnly{f}, ctxReader{ctx: ctx, r: r}, make([]byte, copyBufferSize)); err != nil {
		return n, err
	}
	return n, f.Sync()
}

// Rename moves the file at src to dst (appender), on the same file system.
func (l *Local) Rename(_ context.Context, src, dst string) error {
	from, err := l.path(src)
	if err != nil {
		return err
	}
	to, err := l.path(dst)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o750); err != nil {
		return err
	}
	return os.Rename(from, to)
}

// ctxReader stops reading once ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
