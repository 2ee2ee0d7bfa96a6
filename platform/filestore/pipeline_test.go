package filestore

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"sync/atomic"
	"testing"
	"time"
)

// watchedBody is an upload body that counts the reads made after done is
// set: WriteTo must have stopped reading by the time it returns.
type watchedBody struct {
	r    io.Reader
	done atomic.Bool
	late atomic.Int32
}

func (b *watchedBody) Read(p []byte) (int, error) {
	if b.done.Load() {
		b.late.Add(1)
	}
	return b.r.Read(p[:min(len(p), 4093)])
}

// failingWriter takes limit bytes, then fails.
type failingWriter struct {
	limit, n int
}

var errDiskFull = errors.New("no space left on device")

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.limit {
		return 0, errDiskFull
	}
	w.n += len(p)
	return len(p), nil
}

// slowHash hashes as its Hash does, a little late: WriteTo must wait for
// the last chunk's hash before it returns.
type slowHash struct{ hash.Hash }

func (h slowHash) Write(p []byte) (int, error) {
	time.Sleep(5 * time.Millisecond)
	return h.Hash.Write(p)
}

func body(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>9)
	}
	return b
}

// TestUploadPipeline_WritesAndHashesEveryChunkInOrder: the three-stage
// WriteTo hands the writer every byte in order and hashes all of them, the
// last partial chunk included.
func TestUploadPipeline_WritesAndHashesEveryChunkInOrder(t *testing.T) {
	in := body(readChunks*readAhead + readAhead/2 + 17)
	src := &watchedBody{r: bytes.NewReader(in)}
	u := &uploadReader{r: src, hash: slowHash{sha256.New()}}
	var out bytes.Buffer
	n, err := u.WriteTo(&out)
	src.done.Store(true)
	if err != nil || n != int64(len(in)) || !bytes.Equal(out.Bytes(), in) {
		t.Fatalf("WriteTo: %d bytes, %v; output equal: %v", n, err, bytes.Equal(out.Bytes(), in))
	}
	want := sha256.Sum256(in)
	if got := u.hash.Sum(nil); !bytes.Equal(got, want[:]) || u.n != int64(len(in)) {
		t.Fatalf("hash %x of %d bytes, want %x of %d", got, u.n, want, len(in))
	}
}

// TestUploadPipeline_AWriteErrorStopsTheReaderAndIsAnswered: when the store's
// write fails (a full disk), WriteTo answers that error and has stopped the
// reading goroutine: the body is not read after it returns.
func TestUploadPipeline_AWriteErrorStopsTheReaderAndIsAnswered(t *testing.T) {
	src := &watchedBody{r: bytes.NewReader(body(8 * readAhead))}
	u := &uploadReader{r: src, hash: sha256.New()}
	n, err := u.WriteTo(&failingWriter{limit: 2 * readAhead})
	src.done.Store(true)
	if !errors.Is(err, errDiskFull) || n != 2*readAhead {
		t.Fatalf("WriteTo: %d bytes, %v; want %d and the writer's error", n, err, 2*readAhead)
	}
	if u.n >= 8*readAhead {
		t.Fatalf("the whole body (%d bytes) was read after the write failed", u.n)
	}
	time.Sleep(20 * time.Millisecond) // a reader left running would read on meanwhile
	if late := src.late.Load(); late != 0 {
		t.Fatalf("%d reads of the body after WriteTo returned", late)
	}
}
