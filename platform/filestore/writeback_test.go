package filestore

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// rangeRecorder is a syncingWriter's start that records the ranges it is
// given, slowly enough now and then that writes arrive while one runs.
type rangeRecorder struct {
	mu     sync.Mutex
	ranges [][2]int64
	calls  int
	fail   error
}

func (r *rangeRecorder) start(_ *os.File, off, n int64) error {
	r.mu.Lock()
	r.ranges = append(r.ranges, [2]int64{off, n})
	r.calls++
	slow := r.calls%3 == 0
	r.mu.Unlock()
	if slow {
		time.Sleep(5 * time.Millisecond)
	}
	return r.fail
}

func newRecordedWriter(t *testing.T, rec *rangeRecorder) (*syncingWriter, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "upload")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return &syncingWriter{f: f, start: rec.start}, path
}

// writeRandom writes random chunks of 1 to maxChunk bytes to w until size
// bytes are written, calling after (if any) after each write, and answers the
// bytes written.
func writeRandom(t *testing.T, w *syncingWriter, size int, after func()) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var want bytes.Buffer
	for want.Len() < size {
		chunk := make([]byte, 1+rng.IntN(maxChunk))
		for i := range chunk {
			chunk[i] = byte(rng.Uint32())
		}
		want.Write(chunk)
		if n, err := w.Write(chunk); err != nil || n != len(chunk) {
			t.Fatalf("write: %d, %v", n, err)
		}
		if after != nil {
			after()
		}
	}
	if err := w.wait(); err != nil {
		t.Fatal(err)
	}
	return want.Bytes()
}

const maxChunk = 300 << 10

// startedUntil checks that the recorded ranges follow one another from the
// first byte, each syncEvery or more, and answers where the last ends.
func startedUntil(t *testing.T, rec *rangeRecorder) int64 {
	t.Helper()
	var next int64
	for i, r := range rec.ranges {
		if r[0] != next || r[1] < syncEvery {
			t.Fatalf("range %d is %v after %d bytes started: want it to start there and hold at least %d", i, r, next, syncEvery)
		}
		next += r[1]
	}
	return next
}

// TestSyncingWriter_200_WritebackCoversTheUploadOnceInOrder: the ranges whose
// write-back starts while an upload arrives follow one another from the first
// byte, none missed or repeated, even when writes arrive while a start runs;
// what they leave is what the final Sync has to flush.
func TestSyncingWriter_200_WritebackCoversTheUploadOnceInOrder(t *testing.T) {
	rec := &rangeRecorder{}
	w, path := newRecordedWriter(t, rec)
	want := writeRandom(t, w, 23<<20+12345, nil)
	next := startedUntil(t, rec)
	if len(rec.ranges) < 3 {
		t.Fatalf("%d write-backs started for %d bytes", len(rec.ranges), len(want))
	}
	if left := int64(len(want)) - next; left != w.pending {
		t.Fatalf("%d bytes left for the final Sync, pending %d", left, w.pending)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the file holds %d bytes (%v), not the %d written", len(got), err, len(want))
	}
}

// TestSyncingWriter_200_TheFinalSyncHasLessThanSyncEveryLeft: while the
// starts keep up with the writes (each is over before the next write; how
// long one takes is the scheduler's, so the test waits for it), the final
// Sync has less than syncEvery left, whatever the sizes of the writes.
func TestSyncingWriter_200_TheFinalSyncHasLessThanSyncEveryLeft(t *testing.T) {
	rec := &rangeRecorder{}
	w, _ := newRecordedWriter(t, rec)
	want := writeRandom(t, w, 23<<20+12345, func() {
		if err := w.wait(); err != nil {
			t.Fatal(err)
		}
	})
	next := startedUntil(t, rec)
	if left := int64(len(want)) - next; left != w.pending || left >= syncEvery {
		t.Fatalf("%d bytes left for the final Sync (pending %d), want fewer than %d", left, w.pending, syncEvery)
	}
	if len(rec.ranges) < len(want)/(syncEvery+maxChunk) {
		t.Fatalf("%d write-backs started for %d bytes", len(rec.ranges), len(want))
	}
}

// TestSyncingWriter_500_AWritebackErrorIsAnswered: a background start that
// fails is answered by wait, which Put checks before it syncs and records.
func TestSyncingWriter_500_AWritebackErrorIsAnswered(t *testing.T) {
	rec := &rangeRecorder{fail: errors.New("device gone")}
	w, _ := newRecordedWriter(t, rec)
	if _, err := w.Write(make([]byte, syncEvery)); err != nil {
		t.Fatal(err)
	}
	if err := w.wait(); !errors.Is(err, rec.fail) {
		t.Fatalf("wait: %v, want %v", err, rec.fail)
	}
}

// TestStartWriteback_200_AFileOnDisk: the write-back of a range of a real
// file starts and its data is synced (sync_file_range and fdatasync on Linux,
// fsync elsewhere), and a closed file is an error.
func TestStartWriteback_200_AFileOnDisk(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 3<<20)); err != nil {
		t.Fatal(err)
	}
	if err := startWriteback(f, 1<<20, 2<<20); err != nil {
		t.Fatalf("startWriteback: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := startWriteback(f, 0, 1<<20); err == nil {
		t.Fatal("startWriteback on a closed file: no error")
	}
}
