package files_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/filestore/s3test"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
	"github.com/uptrace/bun"
)

func TestMain(m *testing.M) {
	code := m.Run()
	s3test.Stop()
	os.Exit(code)
}

const filesPath = "/system/v1/files"

var (
	farmer   = testkit.Farmer
	outsider = testkit.Outsider
	admin    = testkit.Admin
	partner  = auth.Principal{UserID: "user-partner", Name: "Pat Partner", OrgID: "org-partner", Orgs: []string{"org-partner"}}
	// colleague is another member of the farmer's organisation.
	colleague = auth.Principal{UserID: "user-colleague", Name: "Colin Colleague", OrgID: "org-farm", Orgs: []string{"org-farm", "org-x"}}
)

// pngBytes is a complete 1x1 PNG image.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
	"\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00\x00IEND\xaeB`\x82")

// env is a test server over one database and one blob backend, with a way
// to list every object (and unfinished upload) the backend holds.
type env struct {
	*testkit.Server
	objects func(t *testing.T) []string
}

type backendCase struct {
	name  string
	setup func(t *testing.T) (configure func(c *config.Config), objects func(t *testing.T, c *config.Config) []string)
}

var backends = []backendCase{
	{name: "local", setup: func(t *testing.T) (func(*config.Config), func(*testing.T, *config.Config) []string) {
		return noEagerThumbs, func(t *testing.T, c *config.Config) []string {
			return testkit.FilesUnder(t, filepath.Join(c.DataDir, "files"))
		}
	}},
	{name: "s3", setup: func(t *testing.T) (func(*config.Config), func(*testing.T, *config.Config) []string) {
		srv := s3test.Start(t)
		bucket := srv.NewBucket(t)
		return func(c *config.Config) { srv.Configure(c, bucket); noEagerThumbs(c) }, func(t *testing.T, _ *config.Config) []string {
			return srv.Objects(t, bucket)
		}
	}},
}

// noEagerThumbs: the tests count the objects of the store, and thumbnails
// made at upload would land in it at their own moment;
// TestThumbnails_200_MadeAtUpload turns them on.
func noEagerThumbs(c *config.Config) { c.Files.ThumbEager = false }

// forEach runs fn on both backends and both dialects, each with a fresh
// database and an empty store.
func forEach(t *testing.T, configure func(c *config.Config), fn func(t *testing.T, e *env)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
				conf, objects := b.setup(t)
				s := testkit.NewServer(t, bdb, func(p *app.Platform) []module.Module {
					return []module.Module{system.New(p.Deps(system.Name))}
				}, testkit.Options{Configure: func(c *config.Config) {
					conf(c)
					if configure != nil {
						configure(c)
					}
				}})
				fn(t, &env{Server: s, objects: func(t *testing.T) []string {
					// Thumbnails made at upload finish first: their writes are not leftovers.
					if err := s.App.P.Files.WaitThumbnails(context.Background()); err != nil {
						t.Fatal(err)
					}
					return objects(t, s.Config)
				}})
			})
		})
	}
}

// part is one multipart part: a field, or the file when file is true.
type part struct {
	name, value string
	file        bool
	filename    string
}

// form builds a multipart body from parts in the order given.
func form(t testing.TB, parts ...part) (*bytes.Reader, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		var err error
		if p.file {
			var fw io.Writer
			fw, err = w.CreateFormFile(p.name, p.filename)
			if err == nil {
				_, err = io.WriteString(fw, p.value)
			}
		} else {
			err = w.WriteField(p.name, p.value)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(buf.Bytes()), w.FormDataContentType()
}

func fields(bucket, typ, name string, extra ...part) []part {
	return append([]part{{name: "bucket", value: bucket}, {name: "type", value: typ}, {name: "name", value: name}}, extra...)
}

func file(content []byte) part {
	return part{name: "file", value: string(content), file: true, filename: "client-name.bin"}
}

// fileRecord is the upload answer.
type fileRecord struct {
	ID             string   `json:"id"`
	Tags           []string `json:"tags"`
	OrganisationID string   `json:"organisationId"`
	UserID         string   `json:"userId"`
	Type           string   `json:"type"`
	Status         string   `json:"status"`
	Info           fileInfo `json:"info"`
}

// fileInfo is the file information the API answers.
type fileInfo = filestore.Info

func (e *env) upload(t *testing.T, p auth.Principal, parts ...part) *testkit.Response {
	t.Helper()
	body, ct := form(t, parts...)
	return e.Do(testkit.Request{Method: http.MethodPost, Path: filesPath, Token: e.Token(p), Body: body, ContentType: ct})
}

func (e *env) mustUpload(t *testing.T, p auth.Principal, parts ...part) fileRecord {
	t.Helper()
	r := e.upload(t, p, parts...)
	if r.Status != http.StatusOK {
		t.Fatalf("upload: %d %s", r.Status, r.Body)
	}
	var rec fileRecord
	r.Decode(t, &rec)
	return rec
}

// pathOf turns an absolute URL of the API into a request path.
func pathOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Host != "api.test" {
		t.Fatalf("url %q", raw)
	}
	return u.RequestURI()
}

func (e *env) rowCount(t *testing.T) int {
	t.Helper()
	n, err := e.Platform.DB.NewSelect().Table("platform_files").Count(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func TestUploadDownloadInfoArchive(t *testing.T) {
	forEach(t, nil, func(t *testing.T, e *env) {
		content := append(slices.Clone(pngBytes), bytes.Repeat([]byte{0, 1, 2, 3, 4, 5, 6, 7}, 4096)...)
		sum := sha256.Sum256(content)
		hash := hex.EncodeToString(sum[:])
		name := `Kühe "Weide" 2026/03 — 50% ✓.png`
		// Fields in any order before the file part; organisations comma-separated and repeated.
		rec := e.mustUpload(t, farmer,
			part{name: "organisations", value: "org-partner, org-partner"}, part{name: "name", value: name},
			part{name: "type", value: "image"}, part{name: "organisations", value: "org-y"}, part{name: "bucket", value: "images"},
			file(content))
		info := rec.Info
		if rec.Status != "active" || rec.UserID != farmer.UserID || rec.OrganisationID != farmer.OrgID || rec.Type != "image" || len(rec.Tags) != 0 {
			t.Fatalf("record %+v", rec)
		}
		if info.Hash != hash || info.ContentType != "image/png" || info.Size != int64(len(content)) || info.Name != name ||
			info.Bucket != "images" || info.UserName != farmer.Name || !slices.Equal(info.Organisations, []string{"org-partner", "org-y"}) {
			t.Fatalf("info %+v", info)
		}
		if !strings.HasPrefix(info.URL, "http://api.test/system/v1/files/"+rec.ID+"?token=") ||
			!strings.HasPrefix(info.URLStream, "http://api.test/system/v1/files/"+rec.ID+"?stream=1&token=") {
			t.Fatalf("urls %q %q", info.URL, info.URLStream)
		}
		if ts, err := time.Parse(time.RFC3339, info.CreatedAtUTC); err != nil || time.Since(ts) > time.Minute || !strings.HasSuffix(info.CreatedAtUTC, "Z") {
			t.Fatalf("createdAtUTC %q", info.CreatedAtUTC)
		}
		if got := e.objects(t); len(got) != 1 || !strings.HasSuffix(got[0], rec.ID) {
			t.Fatalf("store holds %v", got)
		}
		path := filesPath + "/" + rec.ID
		etag := `"` + hash + `"`
		farmerTok, partnerTok := e.Token(farmer), e.Token(partner)
		e.Run(t, []testkit.Scenario{
			{Name: "download200", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: farmerTok}, Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					if !bytes.Equal(r.Body, content) {
						t.Fatalf("body of %d bytes is not the upload", len(r.Body))
					}
					h := r.Header
					if h.Get("ETag") != etag || h.Get("Content-Type") != "image/png" || h.Get("Accept-Ranges") != "bytes" ||
						h.Get("Content-Length") != fmt.Sprint(len(content)) || h.Get("X-Content-Type-Options") != "nosniff" {
						t.Fatalf("headers %v", h)
					}
					kind, params, err := mime.ParseMediaType(h.Get("Content-Disposition"))
					if err != nil || kind != "attachment" || params["filename"] != name {
						t.Fatalf("Content-Disposition %q: %s %v %v", h.Get("Content-Disposition"), kind, params, err)
					}
				}},
			{Name: "download200stream", Req: testkit.Request{Method: http.MethodGet, Path: path + "?stream=1", Token: farmerTok}, Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					if !strings.HasPrefix(r.Header.Get("Content-Disposition"), "inline; ") || !bytes.Equal(r.Body, content) {
						t.Fatalf("disposition %q", r.Header.Get("Content-Disposition"))
					}
				}},
			{Name: "download200colleague", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: e.Token(colleague)}, Status: http.StatusOK},
			{Name: "download200sharedOrg", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: partnerTok}, Status: http.StatusOK},
			{Name: "download206", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: farmerTok, Header: map[string]string{"Range": "bytes=2-9"}}, Status: http.StatusPartialContent,
				Check: func(t *testing.T, r *testkit.Response) {
					if !bytes.Equal(r.Body, content[2:10]) || r.Header.Get("Content-Range") != fmt.Sprintf("bytes 2-9/%d", len(content)) || r.Header.Get("Content-Length") != "8" {
						t.Fatalf("range answer %q %v", r.Body, r.Header)
					}
				}},
			{Name: "download206suffix", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: farmerTok, Header: map[string]string{"Range": "bytes=-5"}}, Status: http.StatusPartialContent,
				Check: func(t *testing.T, r *testkit.Response) {
					if !bytes.Equal(r.Body, content[len(content)-5:]) {
						t.Fatalf("suffix range %q", r.Body)
					}
				}},
			{Name: "download206open", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: farmerTok, Header: map[string]string{"Range": fmt.Sprintf("bytes=%d-", len(content)-100), "If-Range": etag}}, Status: http.StatusPartialContent,
				Check: func(t *testing.T, r *testkit.Response) {
					if !bytes.Equal(r.Body, content[len(content)-100:]) {
						t.Fatalf("open range of %d bytes", len(r.Body))
					}
				}},
			{Name: "download200ifRangeStale", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: farmerTok, Header: map[string]string{"Range": "bytes=0-1", "If-Range": `"old"`}}, Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					if !bytes.Equal(r.Body, content) {
						t.Fatal("a stale If-Range must answer the whole file")
					}
				}},
			{Name: "download200multiRange", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: farmerTok, Header: map[string]string{"Range": "bytes=0-1,5-6"}}, Status: http.StatusOK},
			{Name: "download416", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: farmerTok, Header: map[string]string{"Range": fmt.Sprintf("bytes=%d-", len(content))}}, Status: http.StatusRequestedRangeNotSatisfiable, Code: "bad_request",
				Check: func(t *testing.T, r *testkit.Response) {
					if r.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", len(content)) {
						t.Fatalf("Content-Range %q", r.Header.Get("Content-Range"))
					}
				}},
			{Name: "download304", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: farmerTok, Header: map[string]string{"If-None-Match": `"other", ` + etag}}, Status: http.StatusNotModified,
				Check: func(t *testing.T, r *testkit.Response) {
					if len(r.Body) != 0 || r.Header.Get("ETag") != etag {
						t.Fatalf("304 with body %q, ETag %q", r.Body, r.Header.Get("ETag"))
					}
				}},
			{Name: "download200etagMismatch", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: farmerTok, Header: map[string]string{"If-None-Match": `"other"`}}, Status: http.StatusOK},
			{Name: "download400stream", Req: testkit.Request{Method: http.MethodGet, Path: path + "?stream=maybe", Token: farmerTok}, Status: http.StatusBadRequest},
			{Name: "download401", Req: testkit.Request{Method: http.MethodGet, Path: path}, Status: http.StatusUnauthorized, Code: "unauthorized"},
			{Name: "download404foreign", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: e.Token(outsider)}, Status: http.StatusNotFound, Code: "not_found"},
			{Name: "download404adminOfOtherOrg", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: e.Token(admin)}, Status: http.StatusNotFound, Code: "not_found"},
			{Name: "download404unknown", Req: testkit.Request{Method: http.MethodGet, Path: filesPath + "/0190a0a0-0000-7000-8000-000000000000", Token: farmerTok}, Status: http.StatusNotFound, Code: "not_found"},
			{Name: "info200", Req: testkit.Request{Method: http.MethodGet, Path: path + "/info", Token: partnerTok}, Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					var got fileInfo
					r.Decode(t, &got)
					if got.Hash != hash || got.Name != name || got.Path != info.Path || !strings.Contains(got.URL, "token=") {
						t.Fatalf("info %+v", got)
					}
				}},
			{Name: "info401", Req: testkit.Request{Method: http.MethodGet, Path: path + "/info"}, Status: http.StatusUnauthorized, Code: "unauthorized"},
			{Name: "info404foreign", Req: testkit.Request{Method: http.MethodGet, Path: path + "/info", Token: e.Token(outsider)}, Status: http.StatusNotFound, Code: "not_found"},
			{Name: "delete404foreign", Req: testkit.Request{Method: http.MethodDelete, Path: path, Token: e.Token(outsider)}, Status: http.StatusNotFound, Code: "not_found"},
			{Name: "delete404reader", Req: testkit.Request{Method: http.MethodDelete, Path: path, Token: partnerTok}, Status: http.StatusNotFound, Code: "not_found"},
			{Name: "delete401", Req: testkit.Request{Method: http.MethodDelete, Path: path}, Status: http.StatusUnauthorized, Code: "unauthorized"},
		})

		// Signed URLs work without Authorization; anything else about the token answers 401, never bytes.
		signed := pathOf(t, info.URL)
		token := strings.SplitN(signed, "token=", 2)[1]
		fs := e.Platform.Files
		other := e.mustUpload(t, farmer, append(fields("files", "misc", "other.txt"), file([]byte("other file")))...)
		e.Run(t, []testkit.Scenario{
			{Name: "signed200", Req: testkit.Request{Method: http.MethodGet, Path: signed}, Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					if !bytes.Equal(r.Body, content) {
						t.Fatal("signed download is not the upload")
					}
				}},
			{Name: "signed200stream", Req: testkit.Request{Method: http.MethodGet, Path: pathOf(t, info.URLStream), Header: map[string]string{"Range": "bytes=0-3"}}, Status: http.StatusPartialContent,
				Check: func(t *testing.T, r *testkit.Response) {
					if !bytes.Equal(r.Body, content[:4]) || !strings.HasPrefix(r.Header.Get("Content-Disposition"), "inline") {
						t.Fatalf("stream answer %q", r.Body)
					}
				}},
			{Name: "signed401tampered", Req: testkit.Request{Method: http.MethodGet, Path: path + "?token=" + flip(token)}, Status: http.StatusUnauthorized, Code: "unauthorized"},
			{Name: "signed401expiryChanged", Req: testkit.Request{Method: http.MethodGet, Path: path + "?token=9" + token}, Status: http.StatusUnauthorized, Code: "unauthorized"},
			{Name: "signed401expired", Req: testkit.Request{Method: http.MethodGet, Path: path + "?token=" + url.QueryEscape(fs.SignToken(rec.ID, time.Now().Add(-time.Second)))}, Status: http.StatusUnauthorized, Code: "unauthorized"},
			{Name: "signed401otherFile", Req: testkit.Request{Method: http.MethodGet, Path: path + "?token=" + url.QueryEscape(fs.SignToken(other.ID, time.Now().Add(time.Hour)))}, Status: http.StatusUnauthorized, Code: "unauthorized"},
			{Name: "signed401empty", Req: testkit.Request{Method: http.MethodGet, Path: path + "?token="}, Status: http.StatusUnauthorized, Code: "unauthorized"},
			{Name: "signed401withBearer", Req: testkit.Request{Method: http.MethodGet, Path: path + "?token=x", Token: farmerTok}, Status: http.StatusUnauthorized, Code: "unauthorized"},
		})

		// Archive: uploader once, then 404 everywhere; admins may archive any file.
		e.Run(t, []testkit.Scenario{
			{Name: "delete200", Req: testkit.Request{Method: http.MethodDelete, Path: path, Token: farmerTok}, Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					if m := r.Map(t); m["status"] != "success" || m["id"] != rec.ID {
						t.Fatalf("answer %s", r.Body)
					}
				}},
			{Name: "delete404twice", Req: testkit.Request{Method: http.MethodDelete, Path: path, Token: farmerTok}, Status: http.StatusNotFound, Code: "not_found"},
			{Name: "download404archived", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: farmerTok}, Status: http.StatusNotFound, Code: "not_found"},
			{Name: "signed404archived", Req: testkit.Request{Method: http.MethodGet, Path: signed}, Status: http.StatusNotFound, Code: "not_found"},
			{Name: "info404archived", Req: testkit.Request{Method: http.MethodGet, Path: path + "/info", Token: farmerTok}, Status: http.StatusNotFound, Code: "not_found"},
			{Name: "delete200admin", Req: testkit.Request{Method: http.MethodDelete, Path: filesPath + "/" + other.ID, Token: e.Token(admin)}, Status: http.StatusOK},
		})
		// Archiving keeps the bytes (API.md).
		if got := e.objects(t); len(got) != 2 {
			t.Fatalf("store holds %v after archiving, want both files kept", got)
		}
	})
}

// flip changes the last character of a token.
func flip(s string) string {
	last := s[len(s)-1]
	if last == 'A' {
		return s[:len(s)-1] + "B"
	}
	return s[:len(s)-1] + "A"
}

func TestUploadRefusals(t *testing.T) {
	forEach(t, func(c *config.Config) { c.Files.MaxUploadMB = 1 }, func(t *testing.T, e *env) {
		elf := append([]byte("\x7fELF\x02\x01\x01\x00"), make([]byte, 600)...)
		pe := append([]byte("MZ\x90\x00"), make([]byte, 600)...)
		macho := append([]byte("\xcf\xfa\xed\xfe"), make([]byte, 600)...)
		limit := 1 << 20
		tok := e.Token(farmer)
		post := func(parts ...part) testkit.Request {
			body, ct := form(t, parts...)
			return testkit.Request{Method: http.MethodPost, Path: filesPath, Token: tok, Body: body, ContentType: ct}
		}
		paths := func(want ...string) func(t *testing.T, r *testkit.Response) {
			return func(t *testing.T, r *testkit.Response) {
				got := r.Error(t).Paths()
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("validation paths %v, want %v (%s)", got, want, r.Body)
				}
			}
		}
		e.Run(t, []testkit.Scenario{
			{Name: "upload401", Req: testkit.Request{Method: http.MethodPost, Path: filesPath, Body: strings.NewReader("x"), ContentType: "multipart/form-data; boundary=x"}, Status: http.StatusUnauthorized, Code: "unauthorized"},
			{Name: "upload400notMultipart", Req: testkit.Request{Method: http.MethodPost, Path: filesPath, Token: tok, JSON: map[string]any{"bucket": "files"}}, Status: http.StatusBadRequest, Code: "bad_request"},
			{Name: "upload400malformed", Req: testkit.Request{Method: http.MethodPost, Path: filesPath, Token: tok, Body: strings.NewReader("--x\r\nnot a header\r\n"), ContentType: "multipart/form-data; boundary=x"}, Status: http.StatusBadRequest, Code: "bad_request"},
			{Name: "upload400everything", Req: post(part{name: "unknown", value: "ignored"}), Status: http.StatusBadRequest, Code: "validation_failed", Check: paths("bucket", "type", "name", "file")},
			{Name: "upload400enums", Req: post(append(fields("pictures", "selfie", "a.png"), file(pngBytes))...), Status: http.StatusBadRequest, Code: "validation_failed", Check: paths("bucket", "type")},
			{Name: "upload400name", Req: post(append(fields("files", "misc", "bad\x01name"), file([]byte("x")))...), Status: http.StatusBadRequest, Code: "validation_failed", Check: paths("name")},
			{Name: "upload400longName", Req: post(append(fields("files", "misc", strings.Repeat("n", 256)), file([]byte("x")))...), Status: http.StatusBadRequest, Code: "validation_failed", Check: paths("name")},
			{Name: "upload400duplicate", Req: post(append(fields("files", "misc", "a"), part{name: "bucket", value: "files"}, file([]byte("x")))...), Status: http.StatusBadRequest, Code: "validation_failed", Check: paths("bucket")},
			{Name: "upload400fieldTooLong", Req: post(append(fields("files", "misc", "a"), part{name: "organisations", value: strings.Repeat("o", 9000)}, file([]byte("x")))...), Status: http.StatusBadRequest, Code: "validation_failed", Check: paths("organisations")},
			{Name: "upload400empty", Req: post(append(fields("files", "misc", "empty.txt"), file(nil))...), Status: http.StatusBadRequest, Code: "validation_failed", Check: paths("file")},
			// Fields may follow the file (API.md): what they lack or break is
			// found once the bytes are in, and the bytes then go again.
			{Name: "upload400missingAfterFile", Req: post(file(bytes.Repeat([]byte("late "), 30000)), part{name: "bucket", value: "files"}), Status: http.StatusBadRequest, Code: "validation_failed", Check: paths("type", "name")},
			{Name: "upload400enumAfterFile", Req: post(file([]byte("x")), part{name: "bucket", value: "pictures"}, part{name: "type", value: "misc"}, part{name: "name", value: "a"}), Status: http.StatusBadRequest, Code: "validation_failed", Check: paths("bucket")},
			{Name: "upload400duplicateAfterFile", Req: post(append(fields("files", "misc", "a"), file([]byte("x")), part{name: "name", value: "b"})...), Status: http.StatusBadRequest, Code: "validation_failed", Check: paths("name")},
			{Name: "upload400secondFile", Req: post(append(fields("files", "misc", "a"), file([]byte("x")), file([]byte("y")))...), Status: http.StatusBadRequest, Code: "validation_failed", Check: paths("file")},
			{Name: "upload403foreignOrgAfterFile", Req: post(append(fields("files", "misc", "late.txt"), file(bytes.Repeat([]byte("late "), 30000)), part{name: "organisationId", value: "org-other"})...), Status: http.StatusForbidden, Code: "forbidden"},
			{Name: "upload415afterFile", Req: post(file(elf), part{name: "bucket", value: "files"}, part{name: "type", value: "misc"}, part{name: "name", value: "tool"}), Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type"},
			{Name: "upload403foreignOrg", Req: post(append(fields("files", "misc", "a.txt", part{name: "organisationId", value: "org-other"}), file([]byte("x")))...), Status: http.StatusForbidden, Code: "forbidden"},
			{Name: "upload415elf", Req: post(append(fields("files", "misc", "tool"), file(elf))...), Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type"},
			{Name: "upload415exe", Req: post(append(fields("files", "misc", "setup.pdf"), file(pe))...), Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type"},
			{Name: "upload415macho", Req: post(append(fields("files", "misc", "tool"), file(macho))...), Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type"},
			{Name: "upload415script", Req: post(append(fields("files", "misc", "run.txt"), file([]byte("#!/usr/bin/env python3\nprint('hi')\n")))...), Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type"},
			{Name: "upload415textAsImage", Req: post(append(fields("images", "avatar", "me.png"), file([]byte("hello, I am not a picture")))...), Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type"},
			{Name: "upload415imageAsVideo", Req: post(append(fields("videos", "misc", "clip.mp4"), file(pngBytes))...), Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type"},
			{Name: "upload413", Req: post(append(fields("files", "misc", "big.bin"), file(make([]byte, limit+1)))...), Status: http.StatusRequestEntityTooLarge, Code: "payload_too_large"},
			{Name: "upload413contentLength", Req: testkit.Request{Method: http.MethodPost, Path: filesPath, Token: tok, Body: bytes.NewReader(make([]byte, 2*limit+10)), ContentType: "multipart/form-data; boundary=x"}, Status: http.StatusRequestEntityTooLarge, Code: "payload_too_large"},
			{Name: "upload400interrupted", Req: testkit.Request{Method: http.MethodPost, Path: filesPath, Token: tok, Body: interrupted(t, 300<<10), ContentType: interruptedType}, Status: http.StatusBadRequest, Code: "bad_request"},
		})
		if got := e.objects(t); len(got) != 0 {
			t.Fatalf("refused uploads left %v in the store", got)
		}
		if n := e.rowCount(t); n != 0 {
			t.Fatalf("refused uploads left %d records", n)
		}
		// Exactly at the limit is fine, and is the only thing stored.
		rec := e.mustUpload(t, farmer, append(fields("files", "misc", "limit.bin"), file(make([]byte, limit)))...)
		if got := e.objects(t); len(got) != 1 || !strings.HasSuffix(got[0], rec.ID) || e.rowCount(t) != 1 {
			t.Fatalf("store holds %v", got)
		}
		// The file first and every field after it: a generated client's order.
		late := e.mustUpload(t, farmer, file([]byte("sent before its fields")), part{name: "name", value: "late.txt"},
			part{name: "type", value: "misc"}, part{name: "organisations", value: "org-y"}, part{name: "bucket", value: "files"})
		if late.Info.Name != "late.txt" || late.Info.Bucket != "files" || late.Type != "misc" || !slices.Equal(late.Info.Organisations, []string{"org-y"}) || late.Info.Size != 22 {
			t.Fatalf("file-first upload recorded %+v", late.Info)
		}
		if r := e.Do(testkit.Request{Method: http.MethodGet, Path: filesPath + "/" + late.ID, Token: e.Token(farmer)}); r.Status != http.StatusOK || string(r.Body) != "sent before its fields" {
			t.Fatalf("file-first download: %d %q", r.Status, r.Body)
		}
		if got := e.objects(t); len(got) != 2 {
			t.Fatalf("store holds %v", got)
		}
		// Any organisation of the caller may own the file, not only the current one.
		rec = e.mustUpload(t, colleague, append(fields("files", "misc", "x.txt", part{name: "organisationId", value: "org-x"}), file([]byte("x")))...)
		if rec.OrganisationID != "org-x" || rec.Info.OrganisationID != "org-x" {
			t.Fatalf("organisation %q", rec.OrganisationID)
		}
		if r := e.Do(testkit.Request{Method: http.MethodGet, Path: filesPath + "/" + rec.ID + "/info", Token: e.Token(farmer)}); r.Status != http.StatusNotFound {
			t.Fatalf("a member of another organisation of the uploader reads it: %d", r.Status)
		}
	})
}

const interruptedType = "multipart/form-data; boundary=cut"

// interrupted is an upload whose connection breaks after n bytes of the file.
func interrupted(t *testing.T, n int) io.Reader {
	head := "--cut\r\nContent-Disposition: form-data; name=\"bucket\"\r\n\r\nfiles\r\n" +
		"--cut\r\nContent-Disposition: form-data; name=\"type\"\r\n\r\nmisc\r\n" +
		"--cut\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\ncut.txt\r\n" +
		"--cut\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cut.txt\"\r\n\r\n"
	return io.MultiReader(strings.NewReader(head), strings.NewReader(strings.Repeat("a", n)), brokenReader{})
}

type brokenReader struct{}

func (brokenReader) Read([]byte) (int, error) { return 0, errors.New("connection reset by peer") }

func TestUploadSniffedTypes(t *testing.T) {
	forEach(t, nil, func(t *testing.T, e *env) {
		mp4 := append([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"), make([]byte, 64)...)
		mov := append([]byte("\x00\x00\x00\x14ftypqt  \x00\x00\x00\x00qt  "), make([]byte, 64)...)
		webp := append([]byte("RIFF\x24\x00\x00\x00WEBPVP8 "), make([]byte, 64)...)
		heic := append([]byte("\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic"), make([]byte, 64)...)
		for _, c := range []struct {
			bucket  string
			content []byte
			want    string
		}{
			{"videos", mp4, "video/mp4"},
			{"videos", mov, "video/quicktime"},
			{"images", webp, "image/webp"},
			{"images", heic, "image/heic"},
			{"files", []byte("%PDF-1.4\n%âãÏÓ\n"), "application/pdf"},
			{"files", []byte("<!DOCTYPE html><script>alert(1)</script>"), "text/html; charset=utf-8"},
			{"files", []byte("<?xml version=\"1.0\"?><svg xmlns=\"http://www.w3.org/2000/svg\"/>"), "text/xml; charset=utf-8"},
			{"files", []byte("plain words"), "text/plain; charset=utf-8"},
		} {
			rec := e.mustUpload(t, farmer, append(fields(c.bucket, "misc", "f"), file(c.content))...)
			if rec.Info.ContentType != c.want {
				t.Fatalf("%q sniffed as %q, want %q", c.content[:12], rec.Info.ContentType, c.want)
			}
			r := e.Do(testkit.Request{Method: http.MethodGet, Path: filesPath + "/" + rec.ID + "?stream=true", Token: e.Token(farmer)})
			if r.Status != http.StatusOK || r.Header.Get("Content-Type") != c.want || !bytes.Equal(r.Body, c.content) {
				t.Fatalf("download %d %q", r.Status, r.Header.Get("Content-Type"))
			}
			// A document that can script never opens inline, and runs sandboxed.
			html := strings.HasPrefix(c.want, "text/html") || strings.HasPrefix(c.want, "text/xml")
			if inline := strings.HasPrefix(r.Header.Get("Content-Disposition"), "inline"); inline == html ||
				strings.Contains(r.Header.Get("Content-Security-Policy"), "sandbox") != html {
				t.Fatalf("%s: disposition %q, CSP %q", c.want, r.Header.Get("Content-Disposition"), r.Header.Get("Content-Security-Policy"))
			}
		}
	})
}

// TestReadiness: /readyz checks the file store too.
func TestReadiness(t *testing.T) {
	forEach(t, nil, func(t *testing.T, e *env) {
		r := e.Do(testkit.Request{Method: http.MethodGet, Path: "/readyz"})
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"files":"ok"`) {
			t.Fatalf("readyz %d %s", r.Status, r.Body)
		}
	})
}
