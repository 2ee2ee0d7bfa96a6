//go:build linux

package db

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"modernc.org/libc"
)

// TestSQLiteAllocator_PinnedPagesStayMappedAfterFrees takes and frees as many
// blocks of the sub-journal's size as a savepoint of a listing create does,
// three times over, and asks the kernel (mincore) whether the pages that held
// them are still mapped: without the pinned pages the allocator unmaps each
// one as its last block is freed, and maps it again for the next savepoint.
func TestSQLiteAllocator_PinnedPagesStayMappedAfterFrees(t *testing.T) {
	bdb, err := Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "mem.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bdb.Close() })

	tls := libc.NewTLS()
	defer tls.Close()
	const chunk = 1024 + 8 // a sub-journal chunk with SQLite's size prefix
	blocks := make([]uintptr, 200)
	pages := map[uintptr]bool{}
	for i := range blocks {
		if blocks[i] = libc.Xmalloc(tls, chunk); blocks[i] == 0 {
			t.Fatal("malloc failed")
		}
		pages[blocks[i]&^(allocatorPage-1)] = true
	}
	for _, p := range blocks {
		libc.Xfree(tls, p)
	}
	if len(pages) < 2 {
		t.Fatalf("the blocks fit in %d page; the test needs them spread over several", len(pages))
	}
	vec := make([]byte, allocatorPage/4096)
	for pg := range pages {
		// mincore answers ENOMEM for an address range that is not mapped.
		if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, pg, allocatorPage, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
			t.Errorf("page %#x was unmapped once its blocks were freed: %v", pg, errno)
		}
	}
}
