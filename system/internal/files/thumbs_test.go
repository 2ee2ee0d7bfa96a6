package files_test

import (
	"bytes"
	"fmt"
	"image"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/filestore/thumb/thumbtest"
	"github.com/agritrade/api/platform/testkit"
)

// thumbSizes are the sizes the thumbnail tests configure: every mode.
var thumbSizes = []string{"100x100", "300x300", "300x300f", "600x0", "0x200"}

func withThumbSizes(c *config.Config) { c.Files.ThumbSizes = thumbSizes }

// isImage checks a thumbnail answer: its type, format and exact size.
func isImage(contentType string, w, h int) func(t *testing.T, r *testkit.Response) {
	return func(t *testing.T, r *testkit.Response) {
		t.Helper()
		cfg, format, err := image.DecodeConfig(bytes.NewReader(r.Body))
		if err != nil {
			t.Fatalf("the answer is not an image: %v", err)
		}
		if r.Header.Get("Content-Type") != contentType || "image/"+format != contentType || cfg.Width != w || cfg.Height != h {
			t.Fatalf("%s (%s) %dx%d; want %s %dx%d", r.Header.Get("Content-Type"), format, cfg.Width, cfg.Height, contentType, w, h)
		}
		if !strings.HasPrefix(r.Header.Get("Content-Disposition"), "inline") || r.Header.Get("ETag") == "" ||
			r.Header.Get("Content-Length") != fmt.Sprint(len(r.Body)) {
			t.Fatalf("headers %v", r.Header)
		}
	}
}

// TestThumbnails_200 covers every mode, the four source formats, EXIF
// orientation, transparency, the signed token, ranges, ETag and 304, on
// both backends and both databases; a thumbnail is stored once, beside its
// file.
func TestThumbnails_200(t *testing.T) {
	forEach(t, withThumbSizes, func(t *testing.T, e *env) {
		photo := e.mustUpload(t, farmer, append(fields("images", "image", "Ewes in May.jpg"), file(thumbtest.JPEG(thumbtest.Gradient(1600, 1200))))...)
		turned := e.mustUpload(t, farmer, append(fields("images", "image", "turned.jpg"), file(thumbtest.WithOrientation(thumbtest.JPEG(thumbtest.Halves(800, 400)), 6)))...)
		logo := e.mustUpload(t, farmer, append(fields("images", "logo", "logo.png"), file(thumbtest.PNG(thumbtest.Transparent(400, 400))))...)
		anim := e.mustUpload(t, farmer, append(fields("images", "image", "a.gif"), file(thumbtest.GIF(thumbtest.Halves(400, 200))))...)
		webp := e.mustUpload(t, farmer, append(fields("images", "image", "a.webp"), file(thumbtest.OpaqueWebP))...)
		tok := e.Token(farmer)
		get := func(id, size string) testkit.Request {
			return testkit.Request{Method: http.MethodGet, Path: filesPath + "/" + id + "?thumb=" + size, Token: tok}
		}
		etag := `"` + photo.Info.Hash + `-300x300"`
		e.Run(t, []testkit.Scenario{
			{Name: "thumb200fill", Req: get(photo.ID, "300x300"), Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					isImage("image/jpeg", 300, 300)(t, r)
					if r.Header.Get("ETag") != etag || !strings.Contains(r.Header.Get("Content-Disposition"), "Ewes in May-300x300.jpg") {
						t.Fatalf("ETag %q, disposition %q", r.Header.Get("ETag"), r.Header.Get("Content-Disposition"))
					}
				}},
			{Name: "thumb200fillSmall", Req: get(photo.ID, "100x100"), Status: http.StatusOK, Check: isImage("image/jpeg", 100, 100)},
			{Name: "thumb200fit", Req: get(photo.ID, "300x300f"), Status: http.StatusOK, Check: isImage("image/jpeg", 300, 225)},
			{Name: "thumb200width", Req: get(photo.ID, "600x0"), Status: http.StatusOK, Check: isImage("image/jpeg", 600, 450)},
			{Name: "thumb200height", Req: get(photo.ID, "0x200"), Status: http.StatusOK, Check: isImage("image/jpeg", 266, 200)},
			{Name: "thumb200exifTurned", Req: get(turned.ID, "0x200"), Status: http.StatusOK, Check: isImage("image/jpeg", 100, 200)},
			{Name: "thumb200transparentPNG", Req: get(logo.ID, "100x100"), Status: http.StatusOK, Check: isImage("image/png", 100, 100)},
			{Name: "thumb200gif", Req: get(anim.ID, "300x300f"), Status: http.StatusOK, Check: isImage("image/jpeg", 300, 150)},
			{Name: "thumb200webp", Req: get(webp.ID, "100x100"), Status: http.StatusOK, Check: isImage("image/jpeg", 100, 100)},
			{Name: "thumb200signedToken", Req: testkit.Request{Method: http.MethodGet, Path: pathOf(t, photo.Info.URL) + "&thumb=300x300"}, Status: http.StatusOK,
				Check: isImage("image/jpeg", 300, 300)},
			{Name: "thumb200colleague", Req: testkit.Request{Method: http.MethodGet, Path: filesPath + "/" + photo.ID + "?thumb=100x100", Token: e.Token(colleague)}, Status: http.StatusOK},
			{Name: "thumb304", Req: testkit.Request{Method: http.MethodGet, Path: filesPath + "/" + photo.ID + "?thumb=300x300", Token: tok, Header: map[string]string{"If-None-Match": etag}},
				Status: http.StatusNotModified, Check: func(t *testing.T, r *testkit.Response) {
					if len(r.Body) != 0 || r.Header.Get("ETag") != etag {
						t.Fatalf("304: %q %v", r.Body, r.Header)
					}
				}},
			{Name: "thumb200fileETagIsNotTheThumbs", Req: testkit.Request{Method: http.MethodGet, Path: filesPath + "/" + photo.ID + "?thumb=300x300", Token: tok, Header: map[string]string{"If-None-Match": `"` + photo.Info.Hash + `"`}},
				Status: http.StatusOK},
			{Name: "thumb206", Req: testkit.Request{Method: http.MethodGet, Path: filesPath + "/" + photo.ID + "?thumb=300x300", Token: tok, Header: map[string]string{"Range": "bytes=0-1"}},
				Status: http.StatusPartialContent, Check: func(t *testing.T, r *testkit.Response) {
					if !bytes.Equal(r.Body, []byte{0xff, 0xd8}) || !strings.HasPrefix(r.Header.Get("Content-Range"), "bytes 0-1/") {
						t.Fatalf("range of a thumbnail: %x %v", r.Body, r.Header)
					}
				}},
		})
		// Stored once per size, beside the file; asking again writes nothing new.
		before := e.objects(t)
		want := []string{".thumb-300x300.jpg", ".thumb-100x100.jpg", ".thumb-300x300f.jpg", ".thumb-600x0.jpg", ".thumb-0x200.jpg"}
		for _, suffix := range want {
			if !slices.ContainsFunc(before, func(k string) bool { return strings.HasSuffix(k, photo.ID+suffix) }) {
				t.Fatalf("no %s beside the photo in %v", suffix, before)
			}
		}
		if !slices.ContainsFunc(before, func(k string) bool { return strings.HasSuffix(k, logo.ID+".thumb-100x100.png") }) {
			t.Fatalf("no PNG thumbnail of the logo in %v", before)
		}
		r := e.Do(get(photo.ID, "300x300"))
		if r.Status != http.StatusOK || len(e.objects(t)) != len(before) {
			t.Fatalf("second request: %d; store %v, was %v", r.Status, e.objects(t), before)
		}
	})
}

// TestThumbnails_Refused: 400 for a size not configured and for a file that
// is not an image, 415 for a decompression bomb, 404 for others and for an
// archived file (its thumbnails stay in the store, like its bytes).
func TestThumbnails_Refused(t *testing.T) {
	forEach(t, withThumbSizes, func(t *testing.T, e *env) {
		photo := e.mustUpload(t, farmer, append(fields("images", "image", "p.jpg"), file(thumbtest.JPEG(thumbtest.Gradient(640, 480))))...)
		doc := e.mustUpload(t, farmer, append(fields("files", "contract", "c.pdf"), file([]byte("%PDF-1.4\n1 0 obj\n<<>>\nendobj\n")))...)
		bomb := e.mustUpload(t, farmer, append(fields("images", "image", "bomb.png"), file(thumbtest.BombPNG(100000, 100000)))...)
		tok := e.Token(farmer)
		get := func(id, size, tok string) testkit.Request {
			return testkit.Request{Method: http.MethodGet, Path: filesPath + "/" + id + "?thumb=" + size, Token: tok}
		}
		namesThumb := func(code string) func(t *testing.T, r *testkit.Response) {
			return func(t *testing.T, r *testkit.Response) {
				v := r.Error(t).Validation
				if len(v) != 1 || v[0].Path != "thumb" || v[0].Code != code {
					t.Fatalf("validation %+v", v)
				}
			}
		}
		e.Run(t, []testkit.Scenario{
			{Name: "thumb400sizeNotConfigured", Req: get(photo.ID, "1200x0", tok), Status: http.StatusBadRequest, Code: "validation_failed", Check: namesThumb("enum")},
			{Name: "thumb400garbage", Req: get(photo.ID, "big", tok), Status: http.StatusBadRequest, Code: "validation_failed", Check: namesThumb("enum")},
			{Name: "thumb400empty", Req: get(photo.ID, "", tok), Status: http.StatusBadRequest, Code: "validation_failed", Check: namesThumb("enum")},
			{Name: "thumb400notImage", Req: get(doc.ID, "100x100", tok), Status: http.StatusBadRequest, Code: "validation_failed", Check: namesThumb("not_image")},
			{Name: "thumb415bomb", Req: get(bomb.ID, "100x100", tok), Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type"},
			{Name: "thumb404outsider", Req: get(photo.ID, "100x100", e.Token(outsider)), Status: http.StatusNotFound, Code: "not_found"},
			{Name: "thumb404outsiderBadSize", Req: get(photo.ID, "7x7", e.Token(outsider)), Status: http.StatusNotFound, Code: "not_found"},
			{Name: "thumb401", Req: get(photo.ID, "100x100", ""), Status: http.StatusUnauthorized, Code: "unauthorized"},
			{Name: "thumb200beforeArchive", Req: get(photo.ID, "100x100", tok), Status: http.StatusOK},
		})
		if got := e.objects(t); slices.ContainsFunc(got, func(k string) bool { return strings.Contains(k, bomb.ID+".thumb-") }) {
			t.Fatalf("a refused thumbnail was stored: %v", got)
		}
		if r := e.Do(testkit.Request{Method: http.MethodDelete, Path: filesPath + "/" + photo.ID, Token: tok}); r.Status != http.StatusOK {
			t.Fatalf("archive: %d %s", r.Status, r.Body)
		}
		e.Run(t, []testkit.Scenario{
			{Name: "thumb404archived", Req: get(photo.ID, "100x100", tok), Status: http.StatusNotFound, Code: "not_found"},
			{Name: "thumb404archivedSigned", Req: testkit.Request{Method: http.MethodGet, Path: pathOf(t, photo.Info.URL) + "&thumb=100x100"}, Status: http.StatusNotFound, Code: "not_found"},
		})
		if got := e.objects(t); !slices.ContainsFunc(got, func(k string) bool { return strings.HasSuffix(k, photo.ID+".thumb-100x100.jpg") }) {
			t.Fatalf("archiving removed the thumbnail: %v", got)
		}
	})
}

// TestThumbnails_200_MadeAtUpload: with files.thumb_eager (the default) an
// uploaded photo has every configured size stored shortly after its upload,
// from one decode, so the first request for a tile is served from the store
// (it adds no object); with it off, nothing is made before the first request.
func TestThumbnails_200_MadeAtUpload(t *testing.T) {
	thumbsOf := func(objects []string, id string) []string {
		var out []string
		for _, k := range objects {
			if strings.Contains(k, id+".thumb-") {
				out = append(out, k)
			}
		}
		return out
	}
	forEach(t, func(c *config.Config) { withThumbSizes(c); c.Files.ThumbEager = true }, func(t *testing.T, e *env) {
		photo := e.mustUpload(t, farmer, append(fields("images", "image", "Lambs.jpg"), file(thumbtest.JPEG(thumbtest.Gradient(1600, 1200))))...)
		deadline := time.Now().Add(30 * time.Second)
		for len(thumbsOf(e.objects(t), photo.ID)) < len(thumbSizes) {
			if time.Now().After(deadline) {
				t.Fatalf("after 30 s the store holds %v for the photo, want all %d sizes", thumbsOf(e.objects(t), photo.ID), len(thumbSizes))
			}
			time.Sleep(20 * time.Millisecond)
		}
		before := e.objects(t)
		r := e.Do(testkit.Request{Method: http.MethodGet, Path: filesPath + "/" + photo.ID + "?thumb=600x0", Token: e.Token(farmer)})
		if r.Status != http.StatusOK {
			t.Fatalf("thumbnail: %d %s", r.Status, r.Body)
		}
		isImage("image/jpeg", 600, 450)(t, r)
		if after := e.objects(t); len(after) != len(before) {
			t.Fatalf("the first request made a thumbnail: store %v, was %v", after, before)
		}
		// A file that is not an image gets none.
		doc := e.mustUpload(t, farmer, append(fields("files", "misc", "notes.txt"), file([]byte("not a picture")))...)
		if got := thumbsOf(e.objects(t), doc.ID); len(got) != 0 {
			t.Fatalf("thumbnails of a text file: %v", got)
		}
	})
	forEach(t, func(c *config.Config) { withThumbSizes(c); c.Files.ThumbEager = false }, func(t *testing.T, e *env) {
		photo := e.mustUpload(t, farmer, append(fields("images", "image", "Lambs.jpg"), file(thumbtest.JPEG(thumbtest.Gradient(800, 600))))...)
		time.Sleep(300 * time.Millisecond)
		if got := thumbsOf(e.objects(t), photo.ID); len(got) != 0 {
			t.Fatalf("thumbnails made at upload with files.thumb_eager off: %v", got)
		}
	})
}
