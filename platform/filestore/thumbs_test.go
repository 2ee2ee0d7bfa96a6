package filestore_test

import (
	"bytes"
	"context"
	"image"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/filestore/thumb/thumbtest"
	"github.com/uptrace/bun"
)

// countingBlobs is a real backend that counts the thumbnails written to it.
type countingBlobs struct {
	filestore.Blobs
	thumbPuts atomic.Int32
}

func (c *countingBlobs) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	if strings.Contains(key, ".thumb-") {
		c.thumbPuts.Add(1)
	}
	return c.Blobs.Put(ctx, key, r)
}

func TestThumbnail_ConcurrentFirstRequestsMakeOneLocal(t *testing.T) {
	testConcurrentThumbnails(t, localBackend())
}

func TestThumbnail_ConcurrentFirstRequestsMakeOneS3(t *testing.T) {
	testConcurrentThumbnails(t, s3Backend())
}

// testConcurrentThumbnails: 20 first requests for one thumbnail, started at
// once, write it once; all get the same record; a later request is served
// from the stored blob (no write); another size is another blob beside it.
func testConcurrentThumbnails(t *testing.T, be backend) {
	forEach(t, []backend{be}, func(t *testing.T, _ *filestore.Service, b filestore.Blobs, be backend, bdb *bun.DB) {
		blobs := &countingBlobs{Blobs: b}
		s := filestore.New(bdb, blobs, filestore.Options{BaseURL: "http://api.test", Signer: auth.NewSigner([]byte("k")), ThumbConcurrency: 1})
		ctx := context.Background()
		rec := put(t, s, farmer, filestore.PutInput{Bucket: "images", Type: "image", Name: "cows.jpg",
			Body: bytes.NewReader(thumbtest.JPEG(thumbtest.Gradient(1600, 1200)))})
		spec, err := s.ThumbSpec(rec, "300x300")
		if err != nil {
			t.Fatal(err)
		}
		const n = 20
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			got   = make([]*filestore.Record, n)
			errs  = make([]error, n)
		)
		for i := range n {
			wg.Go(func() {
				<-start
				got[i], errs[i] = s.Thumbnail(ctx, rec, spec)
			})
		}
		close(start)
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("request %d: %v", i, errs[i])
			}
			if got[i].Path != got[0].Path || got[i].Size != got[0].Size {
				t.Fatalf("request %d got %+v, request 0 %+v", i, got[i], got[0])
			}
		}
		if puts := blobs.thumbPuts.Load(); puts != 1 {
			t.Fatalf("%d concurrent first requests wrote the thumbnail %d times; want once", n, puts)
		}
		th := got[0]
		if th.Path != rec.Path+".thumb-300x300.jpg" || th.ContentType != "image/jpeg" || th.ID != rec.ID ||
			th.Name != "cows-300x300.jpg" || th.ETag() != filestore.ThumbETag(rec, spec) {
			t.Fatalf("thumbnail record %+v", th)
		}
		if items := be.items(t, blobs.Blobs); !slices.Contains(items, th.Path) || !slices.Contains(items, rec.Path) {
			t.Fatalf("store holds %v", items)
		}

		// Served afterwards from the stored blob: no write, the same bytes.
		again, err := s.Thumbnail(ctx, rec, spec)
		if err != nil || again.Path != th.Path || again.Size != th.Size || blobs.thumbPuts.Load() != 1 {
			t.Fatalf("second request: %+v %v, %d writes", again, err, blobs.thumbPuts.Load())
		}
		body, err := s.Read(ctx, again, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(body)
		_ = body.Close()
		cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil || format != "jpeg" || cfg.Width != 300 || cfg.Height != 300 || int64(len(data)) != th.Size {
			t.Fatalf("stored thumbnail: %s %+v %v (%d bytes, record says %d)", format, cfg, err, len(data), th.Size)
		}

		// Another size is another object beside the file.
		wide, _ := s.ThumbSpec(rec, "600x0")
		other, err := s.Thumbnail(ctx, rec, wide)
		if err != nil || other.Path != rec.Path+".thumb-600x0.jpg" || blobs.thumbPuts.Load() != 2 {
			t.Fatalf("600x0: %+v %v", other, err)
		}
	})
}

// TestThumbnail_RefusalsLocal: sizes not configured and files that are not
// images answer 400 naming thumb; a bomb 415 before anything is stored.
func TestThumbnail_RefusalsLocal(t *testing.T) {
	forEach(t, []backend{localBackend()}, func(t *testing.T, _ *filestore.Service, b filestore.Blobs, be backend, bdb *bun.DB) {
		s := filestore.New(bdb, b, filestore.Options{BaseURL: "http://api.test", ThumbSizes: []string{"64x64f"}, ThumbMaxPixels: 1000})
		ctx := context.Background()
		img := put(t, s, farmer, filestore.PutInput{Bucket: "images", Type: "image", Name: "a.png", Body: bytes.NewReader(thumbtest.PNG(thumbtest.Halves(40, 40)))})
		txt := put(t, s, farmer, filestore.PutInput{Bucket: "files", Type: "misc", Name: "a.txt", Body: strings.NewReader("plain words")})
		for _, size := range []string{"100x100", "64x64", "", "64X64F"} {
			_, err := s.ThumbSpec(img, size)
			if e := wantCode(t, err, apierr.CodeValidation); len(e.Validation) != 1 || e.Validation[0].Path != "thumb" || e.Validation[0].Code != "enum" {
				t.Fatalf("%q: %+v", size, e.Validation)
			}
		}
		_, err := s.ThumbSpec(txt, "64x64f")
		if e := wantCode(t, err, apierr.CodeValidation); e.Validation[0].Path != "thumb" || e.Validation[0].Code != "not_image" {
			t.Fatalf("text file: %+v", e.Validation)
		}
		spec, err := s.ThumbSpec(img, "64x64f")
		if err != nil {
			t.Fatal(err)
		}
		// 40 x 40 = 1600 pixels, over the limit of 1000.
		_, err = s.Thumbnail(ctx, img, spec)
		wantCode(t, err, apierr.CodeUnsupportedMedia)
		if items := be.items(t, b); len(items) != 2 {
			t.Fatalf("a refused thumbnail left %v", items)
		}
		if err := filestore.CheckThumbSizes([]string{"100x100", "big"}); err == nil || !strings.Contains(err.Error(), "files.thumb_sizes") {
			t.Fatalf("CheckThumbSizes: %v", err)
		}
	})
}

// TestThumbnail_AClientThatLeavesDoesNotStopTheMaking: the first request's
// context ends while it waits; the thumbnail is still made and stored.
func TestThumbnail_AClientThatLeavesDoesNotStopTheMaking(t *testing.T) {
	forEach(t, []backend{localBackend()}, func(t *testing.T, s *filestore.Service, b filestore.Blobs, _ backend, _ *bun.DB) {
		rec := put(t, s, farmer, filestore.PutInput{Bucket: "images", Type: "image", Name: "b.jpg", Body: bytes.NewReader(thumbtest.JPEG(thumbtest.Gradient(2000, 1500)))})
		spec, _ := s.ThumbSpec(rec, "100x100")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := s.Thumbnail(ctx, rec, spec); err == nil {
			t.Fatal("a cancelled request got its thumbnail")
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			if _, err := b.Stat(context.Background(), rec.Path+".thumb-100x100.jpg"); err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the thumbnail was not made after its client left")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
