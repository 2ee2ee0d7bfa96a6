package filestore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/schema"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

var (
	farmer   = &testkit.Farmer
	outsider = &testkit.Outsider
	admin    = &testkit.Admin
	// partner belongs to an organisation a file can be shared with.
	partner = &auth.Principal{UserID: "user-partner", Name: "Pat Partner", OrgID: "org-partner", Orgs: []string{"org-partner"}}
)

// pngHead is the start of a real PNG file (signature and IHDR chunk).
var pngHead = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")

// backend is one blob store under test with a way to list what it holds.
type backend struct {
	name  string
	open  func(t *testing.T) filestore.Blobs
	items func(t *testing.T, b filestore.Blobs) []string
}

func localBackend() backend {
	return backend{
		name: "local",
		open: func(t *testing.T) filestore.Blobs {
			l, err := filestore.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
		items: func(t *testing.T, b filestore.Blobs) []string {
			return testkit.FilesUnder(t, b.(*filestore.Local).Root())
		},
	}
}

// forEach runs fn per dialect and backend with a fresh service.
func forEach(t *testing.T, backends []backend, fn func(t *testing.T, s *filestore.Service, b filestore.Blobs, be backend, bdb *bun.DB)) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		migrate(t, bdb)
		for _, be := range backends {
			t.Run(be.name, func(t *testing.T) {
				b := be.open(t)
				s := filestore.New(bdb, b, filestore.Options{
					BaseURL: "http://api.test", Path: "/system/v1/files", MaxBytes: 1 << 20, URLTTL: time.Minute,
					Signer: auth.NewSigner([]byte("test")),
				})
				fn(t, s, b, be, bdb)
			})
		}
	})
}

func migrate(t *testing.T, bdb *bun.DB) {
	t.Helper()
	ms, err := schema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.MigrateUp(context.Background(), bdb, schema.Name, ms); err != nil {
		t.Fatal(err)
	}
}

func put(t *testing.T, s *filestore.Service, p *auth.Principal, in filestore.PutInput) *filestore.Record {
	t.Helper()
	rec, err := s.Put(context.Background(), p, in)
	if err != nil {
		t.Fatalf("put: %v", err)
	}
	return rec
}

func wantCode(t *testing.T, err error, code apierr.Code) *apierr.Error {
	t.Helper()
	e, ok := apierr.As(err)
	if !ok || e.Code != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
	return e
}

func TestPutReadResolveLocal(t *testing.T) {
	forEach(t, []backend{localBackend()}, testPutReadResolve)
}

func testPutReadResolve(t *testing.T, s *filestore.Service, b filestore.Blobs, be backend, _ *bun.DB) {
	ctx := context.Background()
	content := append(append([]byte{}, pngHead...), bytes.Repeat([]byte("pixels"), 5000)...)
	rec := put(t, s, farmer, filestore.PutInput{Bucket: "images", Type: "avatar", Name: "me.png", Organisations: []string{"org-partner", " ", "org-partner"}, Body: bytes.NewReader(content)})
	sum := sha256.Sum256(content)
	if rec.Hash != hex.EncodeToString(sum[:]) || rec.Size != int64(len(content)) || rec.ContentType != "image/png" {
		t.Fatalf("record %+v", rec)
	}
	if rec.OrganisationID != farmer.OrgID || len(rec.Organisations) != 1 || rec.Status != filestore.StatusActive {
		t.Fatalf("record %+v", rec)
	}
	if !strings.HasPrefix(rec.SignedURL, "http://api.test/system/v1/files/"+rec.ID+"?token=") {
		t.Fatalf("signed url %q", rec.SignedURL)
	}
	// Byte-exact read back, whole and a slice.
	rc, err := s.Read(ctx, rec, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, content) {
		t.Fatalf("read back %d bytes, want %d", len(got), len(content))
	}
	rc, err = s.Read(ctx, rec, 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, content[10:110]) {
		t.Fatalf("range read %q", got)
	}
	if items := be.items(t, b); len(items) != 1 || items[0] != rec.Path {
		t.Fatalf("store holds %v, want [%s]", items, rec.Path)
	}

	// Readers: uploader, organisation members, shared organisations; not outsiders.
	for _, p := range []*auth.Principal{farmer, partner, {UserID: "someone", OrgID: "x", Orgs: []string{"org-farm"}}} {
		if _, err := s.Get(ctx, p, rec.ID); err != nil {
			t.Fatalf("%s cannot read: %v", p.UserID, err)
		}
	}
	for _, p := range []*auth.Principal{outsider, admin, nil} {
		_, err := s.Get(ctx, p, rec.ID)
		wantCode(t, err, apierr.CodeNotFound)
	}

	// Resolve: canonical refs in order; every bad entry reported with its index.
	other := put(t, s, outsider, filestore.PutInput{Bucket: "files", Type: "misc", Name: "notes.txt", Body: strings.NewReader("hello")})
	second := put(t, s, farmer, filestore.PutInput{Bucket: "files", Type: "contract", Name: "contract.pdf", Body: strings.NewReader("%PDF-1.7\n...")})
	refs, errs, err := s.Resolve(ctx, farmer, []filestore.Ref{{ID: second.ID, Name: "client-side name"}, {ID: rec.ID}})
	if err != nil || len(errs) != 0 {
		t.Fatalf("resolve: %v %v", errs, err)
	}
	if refs[0].ID != second.ID || refs[0].Name != "contract.pdf" || refs[0].URL != "http://api.test/system/v1/files/"+second.ID ||
		refs[0].UserID != farmer.UserID || refs[0].UserName != farmer.Name || refs[0].OrganisationID != farmer.OrgID || refs[1].ID != rec.ID {
		t.Fatalf("refs %+v", refs)
	}
	if _, err := time.Parse(time.RFC3339, refs[0].CreatedAtUTC); err != nil || !strings.HasSuffix(refs[0].CreatedAtUTC, "Z") {
		t.Fatalf("createdAtUTC %q", refs[0].CreatedAtUTC)
	}
	if err := s.Archive(ctx, farmer, second.ID); err != nil {
		t.Fatal(err)
	}
	refs, errs, err = s.Resolve(ctx, farmer, []filestore.Ref{{ID: rec.ID}, {ID: ""}, {ID: other.ID}, {ID: "01900000-0000-7000-8000-000000000000"}, {ID: second.ID}, {ID: rec.ID}})
	if err != nil || refs != nil {
		t.Fatalf("resolve: %v %v", refs, err)
	}
	want := map[string]string{"[1].id": "required", "[2].id": "not_found", "[3].id": "not_found", "[4].id": "not_found", "[5].id": "duplicate"}
	if len(errs) != len(want) {
		t.Fatalf("errors %+v, want %v", errs, want)
	}
	for _, e := range errs {
		if want[e.Path] != e.Code {
			t.Fatalf("error %+v, want %v", e, want)
		}
	}
	// Callers merge the errors under their list's path.
	var f apierr.Fields
	f.At("files").Merge(errs)
	if f.List()[0].Path != "files[1].id" {
		t.Fatalf("merged path %q", f.List()[0].Path)
	}
	refs, errs, err = s.Resolve(ctx, farmer, nil)
	if err != nil || len(errs) != 0 || len(refs) != 0 {
		t.Fatalf("empty resolve: %v %v %v", refs, errs, err)
	}
	_, errs, _ = s.Resolve(ctx, farmer, make([]filestore.Ref, filestore.MaxResolveRefs+1))
	if len(errs) != 1 || errs[0].Code != "max_items" {
		t.Fatalf("too many: %+v", errs)
	}
}

func TestPutRefusals(t *testing.T) {
	forEach(t, []backend{localBackend()}, testPutRefusals)
}

func testPutRefusals(t *testing.T, s *filestore.Service, b filestore.Blobs, be backend, bdb *bun.DB) {
	ctx := context.Background()
	elf := append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 100)...)
	cases := []struct {
		name string
		p    *auth.Principal
		in   filestore.PutInput
		code apierr.Code
	}{
		{"fields", farmer, filestore.PutInput{Bucket: "pictures", Type: "", Name: "a\x00b", Body: strings.NewReader("x")}, apierr.CodeValidation},
		{"foreign org", farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "a", OrganisationID: "org-other", Body: strings.NewReader("x")}, apierr.CodeForbidden},
		{"anonymous", nil, filestore.PutInput{Bucket: "files", Type: "misc", Name: "a", Body: strings.NewReader("x")}, apierr.CodeUnauthorized},
		{"empty", farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "a", Body: strings.NewReader("")}, apierr.CodeValidation},
		{"executable", farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "a", Body: bytes.NewReader(elf)}, apierr.CodeUnsupportedMedia},
		{"script", farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "a", Body: strings.NewReader("#!/bin/sh\nrm -rf /\n")}, apierr.CodeUnsupportedMedia},
		{"text as image", farmer, filestore.PutInput{Bucket: "images", Type: "image", Name: "a", Body: strings.NewReader("not an image")}, apierr.CodeUnsupportedMedia},
		{"image as video", farmer, filestore.PutInput{Bucket: "videos", Type: "misc", Name: "a", Body: bytes.NewReader(pngHead)}, apierr.CodeUnsupportedMedia},
		{"too large", farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "a", Body: io.LimitReader(zeros{}, 1<<20+1)}, apierr.CodePayloadTooLarge},
		{"body fails", farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "a", Body: io.MultiReader(io.LimitReader(zeros{}, 200<<10), failing{})}, apierr.CodeBadRequest},
		{"body refuses", farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "a", Body: io.MultiReader(io.LimitReader(zeros{}, 100), failing{apierr.BadRequest("stop")})}, apierr.CodeBadRequest},
	}
	for _, c := range cases {
		_, err := s.Put(ctx, c.p, c.in)
		e := wantCode(t, err, c.code)
		if c.name == "fields" {
			paths := map[string]bool{}
			for _, v := range e.Validation {
				paths[v.Path] = true
			}
			if len(paths) != 3 || !paths["bucket"] || !paths["type"] || !paths["name"] {
				t.Fatalf("validation %+v", e.Validation)
			}
		}
	}
	// Exactly at the limit is accepted.
	put(t, s, farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "a", Body: io.LimitReader(zeros{}, 1<<20)})
	if items := be.items(t, b); len(items) != 1 {
		t.Fatalf("refused uploads left %v", items)
	}
	n, err := bdb.NewSelect().Table("platform_files").Count(ctx)
	if err != nil || n != 1 {
		t.Fatalf("%d rows (%v), want 1", n, err)
	}
}

func TestArchive(t *testing.T) {
	forEach(t, []backend{localBackend()}, func(t *testing.T, s *filestore.Service, _ filestore.Blobs, _ backend, _ *bun.DB) {
		ctx := context.Background()
		rec := put(t, s, farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "a.txt", Body: strings.NewReader("a")})
		wantCode(t, s.Archive(ctx, outsider, rec.ID), apierr.CodeNotFound)
		wantCode(t, s.Archive(ctx, partner, rec.ID), apierr.CodeNotFound) // may read, may not archive
		if err := s.Archive(ctx, farmer, rec.ID); err != nil {
			t.Fatal(err)
		}
		wantCode(t, s.Archive(ctx, farmer, rec.ID), apierr.CodeNotFound)
		_, err := s.Get(ctx, farmer, rec.ID)
		wantCode(t, err, apierr.CodeNotFound)
		other := put(t, s, farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "b.txt", Body: strings.NewReader("b")})
		if err := s.Archive(ctx, admin, other.ID); err != nil {
			t.Fatalf("admin archive: %v", err)
		}
		wantCode(t, s.Archive(ctx, admin, "no-such-id"), apierr.CodeNotFound)
	})
}

func TestSignedToken(t *testing.T) {
	forEach(t, []backend{localBackend()}, func(t *testing.T, s *filestore.Service, _ filestore.Blobs, _ backend, _ *bun.DB) {
		ctx := context.Background()
		rec := put(t, s, farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "a.txt", Body: strings.NewReader("a")})
		other := put(t, s, farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "b.txt", Body: strings.NewReader("b")})
		// The URLs carry a token that expires after Options.URLTTL (files.url_ttl).
		tok, err := url.ParseQuery(strings.SplitN(rec.SignedURL, "?", 2)[1])
		if err != nil {
			t.Fatal(err)
		}
		exp, _, _ := strings.Cut(tok.Get("token"), ".")
		if sec, _ := strconv.ParseInt(exp, 10, 64); time.Until(time.Unix(sec, 0)) > time.Minute || time.Until(time.Unix(sec, 0)) < 55*time.Second {
			t.Fatalf("token %q does not expire in a minute", tok.Get("token"))
		}
		if _, err := s.GetSigned(ctx, rec.ID, tok.Get("token")); err != nil {
			t.Fatal(err)
		}
		good := s.SignToken(rec.ID, time.Now().Add(time.Minute))
		if _, err := s.GetSigned(ctx, rec.ID, good); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"", "x", good + "x", s.SignToken(rec.ID, time.Now().Add(-time.Second)), s.SignToken(other.ID, time.Now().Add(time.Minute))} {
			_, err := s.GetSigned(ctx, rec.ID, bad)
			wantCode(t, err, apierr.CodeUnauthorized)
		}
		if err := s.Archive(ctx, farmer, rec.ID); err != nil {
			t.Fatal(err)
		}
		_, err = s.GetSigned(ctx, rec.ID, good)
		wantCode(t, err, apierr.CodeNotFound)
	})
}

// zeros is an endless stream of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// failing is a body that breaks, like a client that goes away.
type failing struct{ err error }

func (f failing) Read([]byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	return 0, errors.New("connection reset by peer")
}

// TestAcceptTypes: the document kinds are the owning module's list
// (AcceptTypes); without one, any non-empty type is accepted.
func TestAcceptTypes(t *testing.T) {
	forEach(t, []backend{localBackend()}, func(t *testing.T, s *filestore.Service, b filestore.Blobs, be backend, bdb *bun.DB) {
		ctx := context.Background()
		in := func(typ string) filestore.PutInput {
			return filestore.PutInput{Bucket: "files", Type: typ, Name: "a.txt", Body: strings.NewReader("hello")}
		}
		typeFailure := func(t *testing.T, err error, rule string) {
			t.Helper()
			e := wantCode(t, err, apierr.CodeValidation)
			if len(e.Validation) != 1 || e.Validation[0].Path != "type" || e.Validation[0].Code != rule {
				t.Fatalf("validation %+v, want one %s failure of type", e.Validation, rule)
			}
		}
		t.Run("noList/200_anyType", func(t *testing.T) {
			rec := put(t, s, farmer, in("delivery-note"))
			var n int
			if err := bdb.NewRaw("SELECT count(*) FROM platform_files WHERE id = ? AND type = ?", rec.ID, "delivery-note").Scan(ctx, &n); err != nil || n != 1 {
				t.Fatalf("stored %d rows of type delivery-note (%v)", n, err)
			}
		})
		t.Run("noList/400_emptyType", func(t *testing.T) {
			_, err := s.Put(ctx, farmer, in("  "))
			typeFailure(t, err, "required")
		})
		s.AcceptTypes("misc", "contract")
		before := len(be.items(t, b))
		t.Run("list/400_unknownType", func(t *testing.T) {
			_, err := s.Put(ctx, farmer, in("delivery-note"))
			typeFailure(t, err, "enum")
			typeFailure(t, s.Check(farmer, in("delivery-note")), "enum")
			if after := len(be.items(t, b)); after != before {
				t.Fatalf("a refused upload left a blob: %d, then %d", before, after)
			}
		})
		t.Run("list/200_listedType", func(t *testing.T) {
			if rec := put(t, s, farmer, in("contract")); rec.Type != "contract" {
				t.Fatalf("type %q", rec.Type)
			}
		})
	})
}

// piecewise hands out its reader's bytes a few KiB at a time, as a multipart
// part does, so that the store's read-ahead chunks fill over many reads.
type piecewise struct{ r io.Reader }

func (p piecewise) Read(b []byte) (int, error) { return p.r.Read(b[:min(len(b), 4093)]) }

// TestPut_200_AManyChunkUploadHashesAndStoresEveryByte: an upload of several
// read-ahead chunks (uploadReader.WriteTo reads one while it writes and hashes
// the one before) is stored byte for byte, and its SHA-256 is the whole
// body's, the last partial chunk included.
func TestPut_200_AManyChunkUploadHashesAndStoresEveryByte(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		migrate(t, bdb)
		blobs, err := filestore.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		s := filestore.New(bdb, blobs, filestore.Options{
			BaseURL: "http://api.test", Path: "/system/v1/files", MaxBytes: 8 << 20, URLTTL: time.Minute,
			Signer: auth.NewSigner([]byte("test")),
		})
		content := make([]byte, 3<<20+12345)
		r := rand.New(rand.NewPCG(1, 2))
		for i := range content {
			content[i] = byte(r.Uint32())
		}
		rec := put(t, s, farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "big.bin", Body: piecewise{bytes.NewReader(content)}})
		sum := sha256.Sum256(content)
		if rec.Hash != hex.EncodeToString(sum[:]) || rec.Size != int64(len(content)) {
			t.Fatalf("record hash %s size %d, want %x and %d", rec.Hash, rec.Size, sum, len(content))
		}
		rc, err := s.Read(t.Context(), rec, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		got, err := io.ReadAll(rc)
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("read back %d bytes (%v), want the %d uploaded", len(got), err, len(content))
		}
	})
}

// fileSink is a connection's writer: it records what its ReadFrom was given.
type fileSink struct {
	bytes.Buffer
	fromFile bool
}

func (s *fileSink) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		_, s.fromFile = lr.R.(*os.File)
	} else {
		_, s.fromFile = r.(*os.File)
	}
	return s.Buffer.ReadFrom(r)
}

// TestRead_200_ALocalFileGoesToAWritersReadFrom: a local download hands the
// file itself (a range of it) to a writer with ReadFrom, where a server's
// connection has the kernel copy it; to any other writer it is copied.
func TestRead_200_ALocalFileGoesToAWritersReadFrom(t *testing.T) {
	forEach(t, []backend{localBackend()}, func(t *testing.T, s *filestore.Service, _ filestore.Blobs, _ backend, _ *bun.DB) {
		content := bytes.Repeat([]byte("0123456789"), 10000)
		rec := put(t, s, farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "n.txt", Body: bytes.NewReader(content)})
		for _, r := range [][2]int64{{0, -1}, {10, 100}} {
			want := content[r[0]:]
			if r[1] >= 0 {
				want = want[:r[1]]
			}
			rc, err := s.Read(t.Context(), rec, r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			var sink fileSink
			n, err := rc.(io.WriterTo).WriteTo(&sink)
			_ = rc.Close()
			if err != nil || n != int64(len(want)) || !bytes.Equal(sink.Bytes(), want) || !sink.fromFile {
				t.Fatalf("range %v: %d bytes, %v, from the file %v", r, n, err, sink.fromFile)
			}
			rc, err = s.Read(t.Context(), rec, r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			var plain bytes.Buffer
			n, err = rc.(io.WriterTo).WriteTo(struct{ io.Writer }{&plain})
			_ = rc.Close()
			if err != nil || n != int64(len(want)) || !bytes.Equal(plain.Bytes(), want) {
				t.Fatalf("range %v to a plain writer: %d bytes, %v", r, n, err)
			}
		}
	})
}
