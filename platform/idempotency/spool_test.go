package idempotency

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
	"time"
)

func plainSum(contentType string, body []byte) [sha256.Size]byte {
	return sha256.Sum256(append(append([]byte(contentType), 0), body...))
}

func TestSpool_SmallBodyInMemoryLargeInAFile(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, memSpool, memSpool + 1, 5 << 20} {
		body := make([]byte, size)
		r := rand.New(rand.NewPCG(1, uint64(size)))
		for i := range body {
			body[i] = byte(r.Uint32())
		}
		// Short reads: the body arrives in pieces, as from a slow client.
		s, pass, err := readSpool(iotest.HalfReader(bytes.NewReader(body)), "application/octet-stream", -1, 6<<20, dir)
		if err != nil || pass != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if s.sum != plainSum("application/octet-stream", body) {
			t.Fatalf("%d bytes: wrong hash", size)
		}
		if inFile := s.file != nil; inFile != (size > memSpool) {
			t.Fatalf("%d bytes: in a file %v", size, inFile)
		}
		got, _ := io.ReadAll(s.reader())
		if !bytes.Equal(got, body) {
			t.Fatalf("%d bytes: the handler reads %d other bytes", size, len(got))
		}
		s.close()
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Fatalf("%d bytes: %d spool files left", size, len(left))
		}
	}
}

func TestSpool_413_OverTheBoundHandsTheWholeBodyOn(t *testing.T) {
	dir := t.TempDir()
	body := bytes.Repeat([]byte("z"), 3<<20)
	s, pass, err := readSpool(bytes.NewReader(body), "multipart/form-data; boundary=x", -1, 1<<20, dir)
	if !errors.Is(err, errTooLarge) || pass == nil {
		t.Fatalf("err %v, pass %v", err, pass)
	}
	got, _ := io.ReadAll(pass)
	if !bytes.Equal(got, body) {
		t.Fatalf("the route reads %d bytes, want %d", len(got), len(body))
	}
	s.close()
	// A body that fails half-way reaches the route with its failure.
	broken := io.MultiReader(bytes.NewReader(body[:memSpool*2]), iotest.ErrReader(io.ErrUnexpectedEOF))
	s, pass, err = readSpool(broken, "application/json", -1, 6<<20, dir)
	if err == nil || pass == nil {
		t.Fatalf("err %v", err)
	}
	if got, rerr := io.ReadAll(pass); len(got) != memSpool*2 || !errors.Is(rerr, io.ErrUnexpectedEOF) {
		t.Fatalf("read %d bytes then %v", len(got), rerr)
	}
	s.close()
}

func TestSpool_MultipartBoundaryLeftOut(t *testing.T) {
	form := func(boundary string, file []byte) []byte {
		var b bytes.Buffer
		b.WriteString("--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\n")
		b.Write(file)
		b.WriteString("\r\n--" + boundary + "--\r\n")
		return b.Bytes()
	}
	file := bytes.Repeat([]byte("abc"), 50000)
	sum := func(boundary string, file []byte) [sha256.Size]byte {
		s, _, err := readSpool(iotest.HalfReader(bytes.NewReader(form(boundary, file))), "multipart/form-data; boundary="+boundary, -1, 1<<20, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		return s.sum
	}
	a := sum("aaaaaaaaaaaaaaaaaaaa0001", file)
	if b := sum("bbbbbbbbbbbbbbbbbbbb0002", file); a != b {
		t.Fatal("the same form with another boundary hashes differently")
	}
	other := bytes.Clone(file)
	other[1000] = 'X'
	if c := sum("aaaaaaaaaaaaaaaaaaaa0001", other); c == a {
		t.Fatal("another file hashes alike")
	}
	// Short boundaries could match file bytes: such forms are hashed as sent.
	if sum("short1", file) == sum("short2", file) {
		t.Fatal("a short boundary was left out")
	}
}

func TestReplacingWriter_AcrossWrites(t *testing.T) {
	in := []byte("xx--BOUNDARYyy--BOUNDARY--BOUND--BOUNDARY")
	for chunk := 1; chunk <= len(in); chunk++ {
		var out bytes.Buffer
		w := &replacingWriter{w: &out, pat: []byte("--BOUNDARY")}
		for i := 0; i < len(in); i += chunk {
			_, _ = w.Write(in[i:min(i+chunk, len(in))])
		}
		w.flush()
		if want := "xx\x00B\x00yy\x00B\x00--BOUND\x00B\x00"; out.String() != want {
			t.Fatalf("chunk %d: %q", chunk, out.String())
		}
	}
}

func TestSweepSpools_OnlyOldSpoolsGo(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, age time.Duration) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("body"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := write("agritrade-idempotency-1", 25*time.Hour)
	fresh := write("agritrade-idempotency-2", time.Hour)
	other := write("someone-else", 48*time.Hour)
	if n := sweepSpools(dir, time.Now().Add(-spoolMaxAge)); n != 1 {
		t.Fatalf("%d removed, want 1", n)
	}
	for p, want := range map[string]bool{old: false, fresh: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Fatalf("%s: exists %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}
