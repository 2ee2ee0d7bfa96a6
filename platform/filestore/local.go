package filestore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// tmpDir is the folder of uploads in progress inside the local root. It is on
// the same file system as the objects, so that committing is a rename.
const tmpDir = ".tmp"

// writeBufferSize is the write buffer of one upload: the memory it holds.
const writeBufferSize = 256 << 10

// Local keeps objects as files under a root directory.
type Local struct {
	root string
}

// NewLocal returns a store rooted at dir, creating it when needed. Uploads
// left in its temporary folder by a crash are removed.
func NewLocal(dir string) (*Local, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(root, tmpDir), 0o750); err != nil {
		return nil, fmt.Errorf("create file store directory: %w", err)
	}
	l := &Local{root: root}
	l.removeStaleUploads()
	return l, nil
}

// Root returns the directory the store writes into.
func (l *Local) Root() string { return l.root }

func (l *Local) removeStaleUploads() {
	entries, err := os.ReadDir(filepath.Join(l.root, tmpDir))
	if err != nil {
		return
	}
	for _, e := range entries {
		// A replica sharing the directory may be writing one of these right
		// now: only remove what is clearly abandoned (older than a day).
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
			_ = os.Remove(filepath.Join(l.root, tmpDir, e.Name()))
		}
	}
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
	// Request bodies arrive in small reads (the multipart reader returns at
	// most 4 KiB at a time): gather them into large writes.
	w := bufio.NewWriterSize(f, writeBufferSize)
	if n, err = w.ReadFrom(r); err != nil {
		return n, err
	}
	if err = w.Flush(); err != nil {
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
