package db

import (
	"sync"

	"modernc.org/libc"
)

// The pure-Go SQLite (modernc.org/sqlite) allocates through modernc.org/libc,
// whose allocator hands out small blocks from 64 KiB pages of one size class
// each, mapped with mmap, and unmaps a page the moment its last block is
// freed. SQLite's in-memory sub-journal is the worst case for it: every
// savepoint of a shared write transaction (batch.go) copies each page it
// changes into 1 KiB chunks (about 60 for a listing create, two or three
// pages of the 2 KiB class) and frees them all when it is released. So every
// create mapped fresh pages, took a page fault per 4 KiB of them, and
// unmapped them again (munmap in a threaded process also stops the other
// threads' TLB entries): a sixth of a create's CPU in a profile of workload C.
//
// pinAllocatorPages keeps a few pages of each small size class mapped for
// the life of the process: it takes blocks until it holds pinnedPages pages
// of the class, keeps one block of each page and frees the rest. A page with
// a block in use is never unmapped, and its free blocks serve the next
// allocations of the class, so a savepoint's chunks reuse the same memory
// instead of new mappings. The cost is the pages themselves, mapped once:
// about 3 MiB.
var pinOnce sync.Once

// The size classes pinned: SQLite adds 8 bytes to every allocation, so its
// 1 KiB sub-journal chunks land in the 2 KiB class, which gets the most
// pages; the others (16 B to 16 KiB, the largest class the allocator shares
// a page between) hold SQLite's statements, cursors and records.
const (
	pinnedSmallest   = 4  // 16 B
	pinnedLargest    = 14 // 16 KiB: larger blocks get mappings of their own
	pinnedPages      = 2
	subJournalClass  = 11 // 2 KiB
	subJournalPinned = 16 // ~500 chunks: 2 MiB of journalled pages
	allocatorPage    = 1 << 16
)

func pinAllocatorPages() {
	pinOnce.Do(func() {
		tls := libc.NewTLS()
		defer tls.Close()
		for class := pinnedSmallest; class <= pinnedLargest; class++ {
			pages := pinnedPages
			if class == subJournalClass {
				pages = subJournalPinned
			}
			pinClass(tls, class, pages)
		}
	})
}

// pinClass takes blocks of the class (1<<class bytes) until it holds one on
// each of pages distinct pages, then frees the blocks it does not keep.
func pinClass(tls *libc.TLS, class, pages int) {
	size := libc.Tsize_t(1) << class
	held := map[uintptr]bool{}
	var spare []uintptr
	// A page holds at most allocatorPage/size blocks; the bound only guards
	// against an allocator that behaves otherwise than this expects.
	for tries := 0; len(held) < pages && tries < pages*(allocatorPage>>class+1); tries++ {
		p := libc.Xmalloc(tls, size)
		if p == 0 {
			break
		}
		if pg := p &^ (allocatorPage - 1); !held[pg] {
			held[pg] = true // kept for good: the page stays mapped
			continue
		}
		spare = append(spare, p)
	}
	for _, p := range spare {
		libc.Xfree(tls, p)
	}
}
