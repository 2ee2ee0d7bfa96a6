//go:build linux

package filestore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// directFile creates a file in a temporary folder and skips the test where
// that folder's file system has no direct I/O (the writer then writes
// through the page cache, which writeback_test.go covers).
func directFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "upload"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if err := setDirect(f, true); err != nil {
		t.Skipf("no direct I/O on %s: %v", filepath.Dir(f.Name()), err)
	}
	if err := setDirect(f, false); err != nil {
		t.Fatal(err)
	}
	return f
}

func fileFlags(t *testing.T, f *os.File) int {
	t.Helper()
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	return flags
}

// TestSyncingWriter_200_DirectWritesHoldEveryByte: written direct, a file
// holds exactly the bytes given, whatever the writes' sizes and the memory
// they come from: aligned whole chunks (the body pipeline's), pieces of any
// length at any address, a last partial block, and sizes on either side of a
// block. The writer starts with O_DIRECT and ends without it (the tail).
func TestSyncingWriter_200_DirectWritesHoldEveryByte(t *testing.T) {
	for _, size := range []int{1, directBlock - 1, directBlock, directBlock + 1, readAhead, readAhead + 1, 3*readAhead + 12345, 9<<20 + 7} {
		for _, aligned := range []bool{true, false} {
			f := directFile(t)
			w := newSyncingWriter(f)
			if !w.direct || fileFlags(t, f)&unix.O_DIRECT == 0 {
				t.Fatal("the writer did not turn on direct I/O")
			}
			want := body(size)
			rng := rand.New(rand.NewPCG(uint64(size), 7))
			for off := 0; off < size; {
				n := min(size-off, readAhead)
				var p []byte
				if aligned {
					p = alignedBuffer(readAhead)[:n]
				} else {
					n = min(size-off, 1+rng.IntN(300<<10))
					p = make([]byte, n+1)[1:] // an odd address
				}
				copy(p, want[off:off+n])
				if got, err := w.Write(p); err != nil || got != n {
					t.Fatalf("size %d: write of %d: %d, %v", size, n, got, err)
				}
				off += n
			}
			if err := w.finish(false); err != nil {
				t.Fatal(err)
			}
			if w.written != int64(size) {
				t.Fatalf("size %d: %d bytes counted as written", size, w.written)
			}
			if size%directBlock != 0 && fileFlags(t, f)&unix.O_DIRECT != 0 {
				t.Fatalf("size %d: the tail was written with O_DIRECT still on", size)
			}
			got, err := os.ReadFile(f.Name())
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("size %d (aligned %v): the file holds %d bytes (%v), equal %v", size, aligned, len(got), err, bytes.Equal(got, want))
			}
		}
	}
}

// TestLocalPut_200_ADirectUploadIsReadBackIntoThePageCache: a file uploaded
// through the body pipeline is written direct and read back into the page
// cache (readBack), every page of it by the time Put returns, so that the
// downloads that follow an upload read memory, not the disk.
func TestLocalPut_200_ADirectUploadIsReadBackIntoThePageCache(t *testing.T) {
	directFile(t) // skips where there is no direct I/O
	store, err := NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	in := body(20<<20 + 999)
	u := &uploadReader{r: bytes.NewReader(in), hash: sha256.New()}
	n, err := store.Put(context.Background(), "files/2026/11/abc", u)
	if err != nil || n != int64(len(in)) {
		t.Fatalf("Put: %d, %v", n, err)
	}
	path := filepath.Join(store.Root(), "files", "2026", "11", "abc")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if r, total := resident(t, f, len(in)); r != total {
		t.Fatalf("%d of %d pages in the page cache when the upload is stored", r, total)
	}
	want := sha256.Sum256(in)
	if got := u.hash.Sum(nil); !bytes.Equal(got, want[:]) {
		t.Fatal("the hash is not the body's")
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, in) {
		t.Fatalf("the object holds %d bytes (%v), not the body", len(got), err)
	}
}

// resident counts the pages of f's first size bytes held in the page cache.
func resident(t *testing.T, f *os.File, size int) (int, int) {
	t.Helper()
	m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Munmap(m) }()
	page := os.Getpagesize()
	vec := make([]byte, (size+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n, len(vec)
}
