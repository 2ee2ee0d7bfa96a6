package files_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/filestore/thumb"
	"github.com/agritrade/api/platform/filestore/thumb/thumbtest"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
)

// BenchmarkThumbnail drives the real engine (SQLite, local backend) with a
// 12-megapixel JPEG (4000 x 3000, generated):
//
//   - first: the first request of a 300x300 thumbnail (the stored one is
//     removed before each iteration, outside the timer): read the source,
//     decode, scale, encode, store, serve;
//   - readyAfterUpload: from a new upload's answer until the eager making
//     (files.thumb_eager) has stored every configured size;
//   - cached: the same request once the thumbnail is stored;
//   - download: a plain download of a file of the thumbnail's size, for
//     comparison (a cached thumbnail should cost what a download costs).
func BenchmarkThumbnail(b *testing.B) {
	var cfg *config.Config
	s := testkit.NewServer(b, testkit.DB(b, testkit.SQLite), func(p *app.Platform) []module.Module {
		cfg = p.Config
		return []module.Module{system.New(p.Deps(system.Name))}
	})
	tok := s.Token(farmer)
	upload := func(bucket, name string, content []byte) fileRecord {
		body, ct := form(b, append(fields(bucket, "image", name), file(content))...)
		req := s.NewRequest(testkit.Request{Method: http.MethodPost, Path: filesPath, Token: tok, Body: body, ContentType: ct})
		rec := httptest.NewRecorder()
		s.App.Engine.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("upload: %d %s", rec.Code, rec.Body)
		}
		var f fileRecord
		if err := json.Unmarshal(rec.Body.Bytes(), &f); err != nil {
			b.Fatal(err)
		}
		return f
	}
	get := func(path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		s.App.Engine.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		return rec
	}
	photo := upload("images", "photo.jpg", thumbtest.JPEG(thumbtest.Noisy(4000, 3000)))
	thumbPath := filesPath + "/" + photo.ID + "?thumb=300x300"
	thumbBytes := get(thumbPath).Body.Len()
	key := filepath.Join(cfg.DataDir, "files", filepath.FromSlash(photo.Info.Path)+".thumb-300x300.jpg")
	if _, err := os.Stat(key); err != nil {
		b.Fatalf("the thumbnail is not where expected: %v", err)
	}
	plain := make([]byte, thumbBytes)
	rng := rand.NewChaCha8([32]byte{7})
	_, _ = rng.Read(plain)
	other := upload("files", "same-size.bin", plain)
	b.Logf("source %d bytes (4000x3000), thumbnail %d bytes", photo.Info.Size, thumbBytes)

	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			if err := os.Remove(key); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			get(thumbPath)
		}
	})
	// readyAfterUpload: from an upload's answer until every configured size
	// is stored by the eager making (files.thumb_eager), one decode for all.
	// A request for a tile that comes later than this is a cached read.
	sizes := cfg.Files.ThumbSizes
	source := thumbtest.JPEG(thumbtest.Noisy(4000, 3000))
	b.Run("readyAfterUpload", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			f := upload("images", "again.jpg", source)
			b.StartTimer()
			for _, size := range sizes {
				spec, _ := thumb.Parse(size)
				k := filepath.Join(cfg.DataDir, "files", filepath.FromSlash(f.Info.Path)+".thumb-"+spec.String()+".jpg")
				for {
					if _, err := os.Stat(k); err == nil {
						break
					}
					time.Sleep(time.Millisecond)
				}
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r := get(thumbPath); r.Body.Len() != thumbBytes {
				b.Fatal("short answer")
			}
		}
	})
	b.Run("download", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r := get(filesPath + "/" + other.ID); !bytes.Equal(r.Body.Bytes()[:8], plain[:8]) || !strings.HasPrefix(r.Header().Get("Content-Type"), "application/") {
				b.Fatal("not the file")
			}
		}
	})
}
