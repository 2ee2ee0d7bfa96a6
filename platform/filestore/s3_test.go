package filestore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/filestore/s3test"
	"github.com/agritrade/api/platform/testkit"
	"github.com/minio/minio-go/v7"
	"github.com/uptrace/bun"
)

func TestMain(m *testing.M) {
	code := m.Run()
	s3test.Stop()
	os.Exit(code)
}

// s3Backend opens the S3 backend on a fresh bucket of the test MinIO, with
// the smallest part size so that a few MiB already take the multipart path.
func s3Backend() backend {
	var srv *s3test.Server
	var bucket string
	return backend{
		name: "s3",
		open: func(t *testing.T) filestore.Blobs {
			srv = s3test.Start(t)
			bucket = srv.NewBucket(t)
			b, err := filestore.NewS3(context.Background(), filestore.S3Options{
				Endpoint: srv.Endpoint, Bucket: bucket, AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey,
				Prefix: "tenant", PartSize: filestore.MinPartSize,
			})
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		items: func(t *testing.T, _ filestore.Blobs) []string {
			out := srv.Objects(t, bucket)
			for i, k := range out {
				// Report keys as the service knows them (without the prefix).
				if len(k) > len("tenant/") && k[:len("tenant/")] == "tenant/" {
					out[i] = k[len("tenant/"):]
				}
			}
			return out
		},
	}
}

func TestPutReadResolveS3(t *testing.T) {
	forEach(t, []backend{s3Backend()}, testPutReadResolve)
}

func TestPutRefusalsS3(t *testing.T) {
	forEach(t, []backend{s3Backend()}, testPutRefusals)
}

// TestS3Multipart stores an object larger than the part size (so it goes up
// as a multipart upload), reads it back byte for byte and in ranges that
// cross part boundaries, and checks that a body failing after some parts
// were sent leaves no object and no unfinished upload.
func TestS3Multipart(t *testing.T) {
	be := s3Backend()
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		migrate(t, bdb)
		b := be.open(t)
		s := filestore.New(bdb, b, filestore.Options{BaseURL: "http://api.test", MaxBytes: 64 << 20, Signer: auth.NewSigner([]byte("k"))})
		ctx := context.Background()
		content := make([]byte, 12<<20+12345) // three parts of 5 MiB, the last one short
		rng := rand.NewChaCha8([32]byte{1, 2, 3})
		_, _ = rng.Read(content)
		copy(content, "%PDF-1.7\n")
		rec := put(t, s, farmer, filestore.PutInput{Bucket: "files", Type: "contract", Name: "big.pdf", Body: onlyReader{bytes.NewReader(content)}})
		sum := sha256.Sum256(content)
		if rec.Size != int64(len(content)) || rec.Hash != hex.EncodeToString(sum[:]) || rec.ContentType != "application/pdf" {
			t.Fatalf("record %+v", rec)
		}
		s3b := b.(*filestore.S3)
		info, err := s3b.Client().StatObject(ctx, s3b.Bucket(), "tenant/"+rec.Path, minio.StatObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A multipart object's ETag is "<md5 of part md5s>-<parts>".
		if want := "-3"; len(info.ETag) < 3 || info.ETag[len(info.ETag)-2:] != want {
			t.Fatalf("object ETag %q: not a 3-part multipart upload", info.ETag)
		}
		rc, err := s.Read(ctx, rec, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("read back %d bytes (%v), not byte-exact", len(got), err)
		}
		for _, r := range [][2]int64{{0, 1}, {5<<20 - 10, 20}, {10<<20 - 1, 2}, {int64(len(content)) - 7, 7}, {123, -1}} {
			rc, err := s.Read(ctx, rec, r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(rc)
			rc.Close()
			end := int64(len(content))
			if r[1] >= 0 {
				end = r[0] + r[1]
			}
			if !bytes.Equal(got, content[r[0]:end]) {
				t.Fatalf("range %v: %d bytes differ", r, len(got))
			}
		}
		// A body that fails after two parts went up.
		_, err = s.Put(ctx, farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "broken.bin",
			Body: io.MultiReader(bytes.NewReader(content[:11<<20]), failing{})})
		wantCode(t, err, apierr.CodeBadRequest)
		if items := be.items(t, b); len(items) != 1 || items[0] != rec.Path {
			t.Fatalf("bucket holds %v after an aborted multipart upload, want only %s", items, rec.Path)
		}
		// Over the limit in the middle of the upload.
		small := filestore.New(bdb, b, filestore.Options{MaxBytes: 7 << 20, Signer: auth.NewSigner([]byte("k"))})
		_, err = small.Put(ctx, farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "big.bin", Body: bytes.NewReader(content)})
		wantCode(t, err, apierr.CodePayloadTooLarge)
		if items := be.items(t, b); len(items) != 1 {
			t.Fatalf("bucket holds %v after a refused upload", items)
		}
	})
}

// onlyReader hides everything but Read, as a request body does.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
