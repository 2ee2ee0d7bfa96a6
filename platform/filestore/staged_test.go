package filestore_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/filestore"
	"github.com/uptrace/bun"
)

// failAfter yields n bytes of data, then fails.
type failAfter struct {
	data []byte
	n    int
}

func (f *failAfter) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("connection lost")
	}
	k := copy(p, f.data[:min(len(f.data), f.n)])
	f.data, f.n = f.data[k:], f.n-k
	return k, nil
}

// TestLocalAppend_CutBackToTheOffset: Append writes at the offset after
// cutting what lies past it, cuts back to the offset when the body fails
// mid-way, answers ErrShort for an offset past the file's end, and Rename
// moves the file into a key.
func TestLocalAppend_CutBackToTheOffset(t *testing.T) {
	l, err := filestore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key := filestore.ScratchPrefix + "u1.data"
	size := func() int64 {
		t.Helper()
		st, err := os.Stat(filepath.Join(l.Root(), filepath.FromSlash(key)))
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	if _, err := l.Append(ctx, key, 5, bytes.NewReader([]byte("x"))); !errors.Is(err, filestore.ErrShort) {
		t.Fatalf("append past a missing file: %v", err)
	}
	if n, err := l.Append(ctx, key, 0, bytes.NewReader([]byte("hello "))); err != nil || n != 6 {
		t.Fatalf("first: %d %v", n, err)
	}
	// A body cut after 3 of its bytes: the file goes back to 6 bytes.
	if _, err := l.Append(ctx, key, 6, &failAfter{data: []byte("world"), n: 3}); err == nil || size() != 6 {
		t.Fatalf("cut append: %v, size %d", err, size())
	}
	// Bytes left past the offset (a writer that died before cutting back)
	// are overwritten.
	if _, err := l.Append(ctx, key, 6, bytes.NewReader([]byte("WORLD!!!"))); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Append(ctx, key, 6, bytes.NewReader([]byte("world"))); err != nil || n != 5 || size() != 11 {
		t.Fatalf("append again: %d %v size %d", n, err, size())
	}
	if _, err := l.Append(ctx, key, 12, bytes.NewReader([]byte("x"))); !errors.Is(err, filestore.ErrShort) {
		t.Fatalf("append past the end: %v", err)
	}
	if err := l.Rename(ctx, key, "files/2026/11/f1"); err != nil {
		t.Fatal(err)
	}
	rc, err := l.Open(ctx, "files/2026/11/f1", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	if got, _ := io.ReadAll(rc); string(got) != "hello world" {
		t.Fatalf("file %q", got)
	}
}

// stage writes content as a staged upload the way the backend stages
// (local: a scratch file; S3: a multipart upload of two parts, completed).
func stage(t *testing.T, s *filestore.Service, key string, content []byte) filestore.Staged {
	t.Helper()
	ctx := t.Context()
	sum := sha256.Sum256(content)
	st := filestore.Staged{Key: key, Size: int64(len(content)), Hash: hex.EncodeToString(sum[:])}
	if s.CanAppend() {
		st.From = filestore.ScratchPrefix + "up-" + strings.ReplaceAll(key, "/", "-")
		if _, err := s.AppendScratch(ctx, st.From, 0, bytes.NewReader(content)); err != nil {
			t.Fatal(err)
		}
		return st
	}
	id, err := s.StartParts(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	cut := filestore.MinPartSize
	p1, err := s.PutPart(ctx, key, id, 1, bytes.NewReader(content[:cut]), int64(cut))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := s.PutPart(ctx, key, id, 2, bytes.NewReader(content[cut:]), int64(len(content)-cut))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteParts(ctx, key, id, []filestore.Part{p1, p2}); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestAdopt_ChecksOfPut_Idempotent_DropStaged: staged bytes become a file
// with Put's checks (415 for text in the images bucket, the bytes left for
// the caller), the same key adopted again answers the same record, and
// DropStaged removes unrecorded bytes but never a file's.
func TestAdopt_ChecksOfPut_Idempotent_DropStaged(t *testing.T) {
	forEach(t, []backend{localBackend(), s3Backend()}, func(t *testing.T, small *filestore.Service, b filestore.Blobs, be backend, bdb *bun.DB) {
		ctx := t.Context()
		content := append(append([]byte{}, pngHead...), bytes.Repeat([]byte{7}, filestore.MinPartSize+1000)...)
		in := filestore.PutInput{Bucket: "images", Type: "avatar", Name: "staged.png"}
		key := small.ReserveKey(farmer, "images")
		st := stage(t, small, key, content)
		_, err := small.Adopt(ctx, farmer, in, st) // over its 1 MiB limit
		wantCode(t, err, apierr.CodePayloadTooLarge)
		s := filestore.New(bdb, b, filestore.Options{BaseURL: "http://api.test", MaxBytes: 64 << 20})
		rec, err := s.Adopt(ctx, farmer, in, st)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Path != key || !strings.HasSuffix(key, rec.ID) || rec.ContentType != "image/png" || rec.Hash != st.Hash || rec.Size != int64(len(content)) {
			t.Fatalf("record %+v", rec)
		}
		again, err := s.Adopt(ctx, farmer, in, st)
		if err != nil || again.ID != rec.ID {
			t.Fatalf("again: %v %v", again, err)
		}
		if err := s.DropStaged(ctx, key); err != nil {
			t.Fatal(err)
		}
		rc, err := s.Read(ctx, rec, 0, -1)
		if err != nil {
			t.Fatalf("the file after DropStaged: %v", err)
		}
		got, _ := io.ReadAll(rc)
		_ = rc.Close()
		if !bytes.Equal(got, content) {
			t.Fatalf("file of %d bytes", len(got))
		}
		// Text is no image: 415, and the bytes stay for the caller to drop.
		text := bytes.Repeat([]byte("not a picture "), filestore.MinPartSize/14+100)
		key2 := s.ReserveKey(farmer, "images")
		st2 := stage(t, s, key2, text)
		_, err = s.Adopt(ctx, farmer, in, st2)
		wantCode(t, err, apierr.CodeUnsupportedMedia)
		if n := len(be.items(t, b)); n != 2 {
			t.Fatalf("store holds %v", be.items(t, b))
		}
		if st2.From != "" {
			if err := s.DropStaged(ctx, key2); err != nil { // nothing at the key yet
				t.Fatal(err)
			}
			if err := s.DeleteScratch(ctx, st2.From); err != nil {
				t.Fatal(err)
			}
		} else if err := s.DropStaged(ctx, key2); err != nil {
			t.Fatal(err)
		}
		if got := be.items(t, b); len(got) != 1 || got[0] != key {
			t.Fatalf("store holds %v", got)
		}
	})
}
