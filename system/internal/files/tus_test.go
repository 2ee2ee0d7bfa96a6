package files_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
	"github.com/uptrace/bun"
)

const uploadsPath = "/system/v1/uploads"

// tusMeta encodes Upload-Metadata.
func tusMeta(kv ...string) string {
	var parts []string
	for i := 0; i+1 < len(kv); i += 2 {
		parts = append(parts, kv[i]+" "+base64.StdEncoding.EncodeToString([]byte(kv[i+1])))
	}
	return strings.Join(parts, ",")
}

func imageMeta(name string) string {
	return tusMeta("bucket", "images", "type", "image", "name", name)
}

// tusReq is a tus request with the protocol header.
func tusReq(s *testkit.Server, p auth.Principal, method, path string, body []byte, hdr map[string]string) *testkit.Response {
	h := map[string]string{"Tus-Resumable": "1.0.0"}
	for k, v := range hdr {
		h[k] = v
	}
	r := testkit.Request{Method: method, Path: path, Token: s.Token(p), Header: h}
	if body != nil {
		r.Body = bytes.NewReader(body)
		r.ContentType = "application/offset+octet-stream"
	}
	return s.Do(r)
}

// tusCreate creates an upload and answers its path.
func tusCreate(t *testing.T, s *testkit.Server, p auth.Principal, length int, meta string) string {
	t.Helper()
	r := tusReq(s, p, http.MethodPost, uploadsPath, nil, map[string]string{"Upload-Length": strconv.Itoa(length), "Upload-Metadata": meta})
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	loc := r.Header.Get("Location")
	if !strings.HasPrefix(loc, "http://api.test"+uploadsPath+"/") || r.Header.Get("Upload-Expires") == "" || r.Header.Get("Tus-Resumable") != "1.0.0" {
		t.Fatalf("create headers %v", r.Header)
	}
	return strings.TrimPrefix(loc, "http://api.test")
}

func tusPatch(s *testkit.Server, p auth.Principal, path string, offset int, chunk []byte, hdr ...string) *testkit.Response {
	h := map[string]string{"Upload-Offset": strconv.Itoa(offset)}
	for i := 0; i+1 < len(hdr); i += 2 {
		h[hdr[i]] = hdr[i+1]
	}
	return tusReq(s, p, http.MethodPatch, path, chunk, h)
}

func mustPatch(t *testing.T, s *testkit.Server, p auth.Principal, path string, offset int, chunk []byte) *testkit.Response {
	t.Helper()
	r := tusPatch(s, p, path, offset, chunk)
	if r.Status != http.StatusNoContent || r.Header.Get("Upload-Offset") != strconv.Itoa(offset+len(chunk)) {
		t.Fatalf("patch at %d: %d %v %s", offset, r.Status, r.Header, r.Body)
	}
	return r
}

func headOffset(t *testing.T, s *testkit.Server, p auth.Principal, path string) (int, *testkit.Response) {
	t.Helper()
	r := tusReq(s, p, http.MethodHead, path, nil, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("head: %d", r.Status)
	}
	n, err := strconv.Atoi(r.Header.Get("Upload-Offset"))
	if err != nil {
		t.Fatalf("Upload-Offset %q", r.Header.Get("Upload-Offset"))
	}
	return n, r
}

// pngContent is a PNG of n bytes (a PNG header and filler).
func pngContent(n int) []byte {
	b := slices.Clone(pngBytes)
	for len(b) < n {
		b = append(b, byte(len(b)*7))
	}
	return b[:n]
}

// checkFile downloads the finished file and checks bytes and hash.
func checkFile(t *testing.T, s *testkit.Server, p auth.Principal, id string, content []byte) {
	t.Helper()
	sum := sha256.Sum256(content)
	r := s.Do(testkit.Request{Method: http.MethodGet, Path: filesPath + "/" + id + "/info", Token: s.Token(p)})
	if r.Status != http.StatusOK {
		t.Fatalf("info: %d %s", r.Status, r.Body)
	}
	var info fileInfo
	r.Decode(t, &info)
	if info.Hash != hex.EncodeToString(sum[:]) || info.Size != int64(len(content)) || info.ContentType != "image/png" {
		t.Fatalf("info %+v", info)
	}
	r = s.Do(testkit.Request{Method: http.MethodGet, Path: filesPath + "/" + id, Token: s.Token(p)})
	if r.Status != http.StatusOK || !bytes.Equal(r.Body, content) {
		t.Fatalf("download: %d, %d bytes", r.Status, len(r.Body))
	}
}

// chunks leaves out the multipart uploads in progress an S3 store lists
// ("incomplete:<key>"): the objects that hold bytes.
func chunks(objects []string) []string {
	var out []string
	for _, o := range objects {
		if !strings.HasPrefix(o, "incomplete:") {
			out = append(out, o)
		}
	}
	return out
}

// isLocal tells whether a test runs on the local backend (forEach names).
func isLocal(t *testing.T) bool { return strings.Contains(t.Name(), "/local/") }

func uploadRows(t *testing.T, s *testkit.Server) (uploads, parts int) {
	t.Helper()
	n, err := s.Platform.DB.NewSelect().Table("system_uploads").Count(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Platform.DB.NewSelect().Table("system_upload_parts").Count(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return int(n), int(m)
}

func TestTus_201_Patch204_Head200_FileRecord(t *testing.T) {
	forEach(t, nil, func(t *testing.T, e *env) {
		r := e.Do(testkit.Request{Method: http.MethodOptions, Path: uploadsPath})
		if r.Status != http.StatusNoContent || r.Header.Get("Tus-Version") != "1.0.0" || r.Header.Get("Tus-Checksum-Algorithm") != "sha256" ||
			r.Header.Get("Tus-Extension") != "creation,creation-with-upload,termination,expiration,checksum" || r.Header.Get("Tus-Max-Size") != strconv.Itoa(100<<20) {
			t.Fatalf("options: %d %v", r.Status, r.Header)
		}
		content := pngContent(300 << 10)
		path := tusCreate(t, e.Server, farmer, len(content), imageMeta("yard.png")+","+tusMeta("organisations", "org-partner"))
		if n, h := headOffset(t, e.Server, farmer, path); n != 0 || h.Header.Get("Upload-Length") != strconv.Itoa(len(content)) || h.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("head: %d %v", n, h.Header)
		}
		mustPatch(t, e.Server, farmer, path, 0, content[:100<<10])
		// A chunk with its checksum.
		sum := sha256.Sum256(content[100<<10 : 200<<10])
		r = tusPatch(e.Server, farmer, path, 100<<10, content[100<<10:200<<10], "Upload-Checksum", "sha256 "+base64.StdEncoding.EncodeToString(sum[:]))
		if r.Status != http.StatusNoContent || r.Header.Get("Upload-File-Id") != "" || r.Header.Get("Upload-Expires") == "" {
			t.Fatalf("checksummed patch: %d %v %s", r.Status, r.Header, r.Body)
		}
		if n, _ := headOffset(t, e.Server, farmer, path); n != 200<<10 {
			t.Fatalf("offset %d", n)
		}
		// Local appends to one scratch file; S3 keeps chunks under 5 MiB
		// as scratch objects, one row each, until they make a part.
		wantParts := 2
		if isLocal(t) {
			wantParts = 0
		}
		if u, p := uploadRows(t, e.Server); u != 1 || p != wantParts {
			t.Fatalf("rows %d uploads %d parts", u, p)
		}
		// The last chunk without a Content-Length (stored, then read back).
		r = e.Do(testkit.Request{Method: http.MethodPatch, Path: path, Token: e.Token(farmer), Body: io.MultiReader(bytes.NewReader(content[200<<10:])),
			ContentType: "application/offset+octet-stream", Header: map[string]string{"Tus-Resumable": "1.0.0", "Upload-Offset": strconv.Itoa(200 << 10)}})
		if r.Status != http.StatusNoContent || r.Header.Get("Upload-Offset") != strconv.Itoa(len(content)) {
			t.Fatalf("last patch: %d %v %s", r.Status, r.Header, r.Body)
		}
		id := r.Header.Get("Upload-File-Id")
		if id == "" {
			t.Fatalf("final patch without Upload-File-Id: %v", r.Header)
		}
		checkFile(t, e.Server, farmer, id, content)
		checkFile(t, e.Server, partner, id, content) // shared through the metadata's organisations
		if _, h := headOffset(t, e.Server, farmer, path); h.Header.Get("Upload-File-Id") != id || h.Header.Get("Upload-Offset") != strconv.Itoa(len(content)) {
			t.Fatalf("head after: %v", h.Header)
		}
		// The chunks are gone; the store holds the file alone.
		if got := e.objects(t); len(got) != 1 || !strings.HasSuffix(got[0], id) {
			t.Fatalf("store holds %v", got)
		}
		if _, p := uploadRows(t, e.Server); p != 0 {
			t.Fatalf("%d part rows left", p)
		}
		// Terminating a finished upload removes the upload, not its file.
		if r := tusReq(e.Server, farmer, http.MethodDelete, path, nil, nil); r.Status != http.StatusNoContent {
			t.Fatalf("delete finished: %d %s", r.Status, r.Body)
		}
		checkFile(t, e.Server, farmer, id, content)
		// creation-with-upload: the whole file in the POST.
		small := pngContent(5000)
		r = tusReq(e.Server, farmer, http.MethodPost, uploadsPath, small, map[string]string{"Upload-Length": "5000", "Upload-Metadata": imageMeta("small.png")})
		if r.Status != http.StatusCreated || r.Header.Get("Upload-Offset") != "5000" || r.Header.Get("Upload-File-Id") == "" {
			t.Fatalf("creation-with-upload: %d %v %s", r.Status, r.Header, r.Body)
		}
		checkFile(t, e.Server, farmer, r.Header.Get("Upload-File-Id"), small)
	})
}

// TestTus_RestartAndReplicaSwitch: an upload begun on one server goes on on
// another over the same database and store, and after a restart.
func TestTus_RestartAndReplicaSwitch(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
				conf, objects := b.setup(t)
				dataDir := t.TempDir()
				start := func() *testkit.Server {
					return testkit.NewServer(t, bdb, func(p *app.Platform) []module.Module {
						return []module.Module{system.New(p.Deps(system.Name))}
					}, testkit.Options{Configure: func(c *config.Config) {
						conf(c)
						c.DataDir = dataDir
					}})
				}
				a, other := start(), start()
				content := pngContent(200 << 10)
				path := tusCreate(t, a, farmer, len(content), imageMeta("moved.png"))
				mustPatch(t, a, farmer, path, 0, content[:64<<10])
				if n, _ := headOffset(t, other, farmer, path); n != 64<<10 {
					t.Fatalf("replica sees offset %d", n)
				}
				// Two replicas writing one upload at once: the second gets 423.
				pr, pw := io.Pipe()
				done := make(chan int)
				go func() {
					req := httptest.NewRequest(http.MethodPatch, path, pr)
					req.Header.Set("Authorization", "Bearer "+a.Token(farmer))
					req.Header.Set("Tus-Resumable", "1.0.0")
					req.Header.Set("Upload-Offset", strconv.Itoa(64<<10))
					req.Header.Set("Content-Type", "application/offset+octet-stream")
					rec := httptest.NewRecorder()
					a.App.Engine.ServeHTTP(rec, req)
					done <- rec.Code
				}()
				if _, err := pw.Write(content[64<<10 : 96<<10]); err != nil {
					t.Fatal(err)
				}
				if r := tusPatch(other, farmer, path, 64<<10, content[64<<10:128<<10]); r.Status != http.StatusLocked {
					t.Fatalf("second replica while the first writes: %d %s", r.Status, r.Body)
				}
				_ = pw.Close()
				if code := <-done; code != http.StatusNoContent {
					t.Fatalf("first replica: %d", code)
				}
				mustPatch(t, other, farmer, path, 96<<10, content[96<<10:128<<10])
				// A restart: a new server over the same database and store.
				restarted := start()
				if n, _ := headOffset(t, restarted, farmer, path); n != 128<<10 {
					t.Fatalf("after restart offset %d", n)
				}
				r := mustPatch(t, restarted, farmer, path, 128<<10, content[128<<10:])
				id := r.Header.Get("Upload-File-Id")
				checkFile(t, a, farmer, id, content)
				if got := objects(t, restarted.Config); len(got) != 1 {
					t.Fatalf("store holds %v", got)
				}
			})
		})
	}
}

func TestTus_Refusals_412_409_460_413_415_404_400_423(t *testing.T) {
	forEach(t, func(c *config.Config) { c.Files.MaxUploadMB = 1 }, func(t *testing.T, e *env) {
		s := e.Server
		content := pngContent(64 << 10)
		path := tusCreate(t, s, farmer, len(content), imageMeta("a.png"))
		mustPatch(t, s, farmer, path, 0, content[:1000])
		wrongSum := sha256.Sum256([]byte("other"))
		wantParts := 1 // S3: the first chunk, under 5 MiB, waits as a scratch object
		if isLocal(t) {
			wantParts = 0 // local: the scratch file alone
		}
		nothingMoved := func(t *testing.T) {
			t.Helper()
			if n, _ := headOffset(t, s, farmer, path); n != 1000 {
				t.Fatalf("offset moved to %d", n)
			}
			if _, p := uploadRows(t, s); p != wantParts {
				t.Fatalf("%d parts", p)
			}
			if got := chunks(e.objects(t)); len(got) != 1 {
				t.Fatalf("store holds %v", got)
			}
		}
		tok := s.Token(farmer)
		s.Run(t, []testkit.Scenario{
			{Name: "412noVersion", Req: testkit.Request{Method: http.MethodHead, Path: path, Token: tok}, Status: http.StatusPreconditionFailed,
				Check: func(t *testing.T, r *testkit.Response) {
					if r.Header.Get("Tus-Version") != "1.0.0" {
						t.Fatalf("headers %v", r.Header)
					}
				}},
			{Name: "412wrongVersion", Req: testkit.Request{Method: http.MethodPatch, Path: path, Token: tok, Body: bytes.NewReader(content[1000:2000]), ContentType: "application/offset+octet-stream",
				Header: map[string]string{"Tus-Resumable": "0.2.2", "Upload-Offset": "1000"}}, Status: http.StatusPreconditionFailed, Code: "bad_request"},
			{Name: "415chunkType", Req: testkit.Request{Method: http.MethodPatch, Path: path, Token: tok, Body: bytes.NewReader(content[1000:2000]), ContentType: "application/json",
				Header: map[string]string{"Tus-Resumable": "1.0.0", "Upload-Offset": "1000"}}, Status: http.StatusUnsupportedMediaType},
		})
		for _, sc := range []struct {
			name   string
			r      func() *testkit.Response
			status int
		}{
			{"409offset", func() *testkit.Response { return tusPatch(s, farmer, path, 500, content[500:2000]) }, http.StatusConflict},
			{"460checksum", func() *testkit.Response {
				return tusPatch(s, farmer, path, 1000, content[1000:2000], "Upload-Checksum", "sha256 "+base64.StdEncoding.EncodeToString(wrongSum[:]))
			}, 460},
			{"460lastChunk", func() *testkit.Response {
				return tusPatch(s, farmer, path, 1000, content[1000:], "Upload-Checksum", "sha256 "+base64.StdEncoding.EncodeToString(wrongSum[:]))
			}, 460},
			{"400checksumAlgorithm", func() *testkit.Response {
				return tusPatch(s, farmer, path, 1000, content[1000:2000], "Upload-Checksum", "md5 "+base64.StdEncoding.EncodeToString(wrongSum[:16]))
			}, http.StatusBadRequest},
			{"413pastLength", func() *testkit.Response {
				return tusPatch(s, farmer, path, 1000, append(slices.Clone(content[1000:]), 1))
			}, http.StatusRequestEntityTooLarge},
			{"404otherUserPatch", func() *testkit.Response { return tusPatch(s, colleague, path, 1000, content[1000:2000]) }, http.StatusNotFound},
			{"404otherUserHead", func() *testkit.Response { return tusReq(s, colleague, http.MethodHead, path, nil, nil) }, http.StatusNotFound},
			{"404otherUserDelete", func() *testkit.Response { return tusReq(s, admin, http.MethodDelete, path, nil, nil) }, http.StatusNotFound},
			{"404unknown", func() *testkit.Response { return tusPatch(s, farmer, uploadsPath+"/nope", 1000, content[1000:2000]) }, http.StatusNotFound},
		} {
			t.Run(sc.name, func(t *testing.T) {
				r := sc.r()
				if r.Status != sc.status {
					t.Fatalf("status %d, want %d: %s", r.Status, sc.status, r.Body)
				}
				if r.Header.Get("Tus-Resumable") != "1.0.0" {
					t.Fatalf("no Tus-Resumable: %v", r.Header)
				}
				if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || r.Error(t).Code == "" {
					t.Fatalf("not the project's error body: %v %s", r.Header, r.Body)
				}
				nothingMoved(t)
			})
		}
		t.Run("413createOverLimit", func(t *testing.T) {
			r := tusReq(s, farmer, http.MethodPost, uploadsPath, nil, map[string]string{"Upload-Length": strconv.Itoa(1<<20 + 1), "Upload-Metadata": imageMeta("big.png")})
			if r.Status != http.StatusRequestEntityTooLarge || r.Error(t).Code != "payload_too_large" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
		t.Run("400metadata", func(t *testing.T) {
			r := tusReq(s, farmer, http.MethodPost, uploadsPath, nil, map[string]string{"Upload-Length": "10",
				"Upload-Metadata": tusMeta("bucket", "pictures", "type", "image")})
			if r.Status != http.StatusBadRequest {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if paths := r.Error(t).Paths(); !slices.Contains(paths, "bucket") || !slices.Contains(paths, "name") {
				t.Fatalf("validation %v", paths)
			}
			r = tusReq(s, farmer, http.MethodPost, uploadsPath, nil, map[string]string{"Upload-Length": "10", "Upload-Metadata": imageMeta("x\x00y")})
			if r.Status != http.StatusBadRequest || !slices.Equal(r.Error(t).Paths(), []string{"name"}) {
				t.Fatalf("control character: %d %s", r.Status, r.Body)
			}
			r = tusReq(s, farmer, http.MethodPost, uploadsPath, nil, map[string]string{"Upload-Length": "10", "Upload-Metadata": imageMeta("x.png") + "," + tusMeta("notes", strings.Repeat("n", 20<<10))})
			if r.Status != http.StatusBadRequest || r.Error(t).Code != "bad_request" {
				t.Fatalf("long metadata: %d %s", r.Status, r.Body)
			}
			r = tusReq(s, farmer, http.MethodPost, uploadsPath, nil, map[string]string{"Upload-Length": "10", "Upload-Metadata": "bucket !!!"})
			if r.Status != http.StatusBadRequest || r.Error(t).Code != "bad_request" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			r = tusReq(s, farmer, http.MethodPost, uploadsPath, nil, map[string]string{"Upload-Length": "10", "Upload-Metadata": imageMeta("x.png") + "," + tusMeta("organisationId", "org-partner")})
			if r.Status != http.StatusForbidden {
				t.Fatalf("foreign organisation: %d %s", r.Status, r.Body)
			}
		})
		t.Run("415content", func(t *testing.T) {
			text := bytes.Repeat([]byte("just text, no image "), 100)
			p := tusCreate(t, s, farmer, len(text), imageMeta("fake.png"))
			mustPatch(t, s, farmer, p, 0, text[:1000])
			r := tusPatch(s, farmer, p, 1000, text[1000:])
			if r.Status != http.StatusUnsupportedMediaType {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if r := tusReq(s, farmer, http.MethodHead, p, nil, nil); r.Status != http.StatusNotFound {
				t.Fatalf("refused upload still there: %d", r.Status)
			}
			nothingMoved(t) // the first upload alone is left
		})
		t.Run("423concurrent", func(t *testing.T) {
			pr, pw := io.Pipe()
			done := make(chan *httptest.ResponseRecorder)
			go func() {
				req := httptest.NewRequest(http.MethodPatch, path, pr)
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("Tus-Resumable", "1.0.0")
				req.Header.Set("Upload-Offset", "1000")
				req.Header.Set("Content-Type", "application/offset+octet-stream")
				rec := httptest.NewRecorder()
				s.App.Engine.ServeHTTP(rec, req)
				done <- rec
			}()
			if _, err := pw.Write(content[1000:2000]); err != nil { // the first request holds the lease now
				t.Fatal(err)
			}
			r := tusPatch(s, farmer, path, 1000, content[1000:2000])
			if r.Status != http.StatusLocked {
				t.Fatalf("second writer: %d %s", r.Status, r.Body)
			}
			if r := tusReq(s, farmer, http.MethodDelete, path, nil, nil); r.Status != http.StatusLocked {
				t.Fatalf("delete while written: %d", r.Status)
			}
			_ = pw.Close()
			if rec := <-done; rec.Code != http.StatusNoContent || rec.Header().Get("Upload-Offset") != "2000" {
				t.Fatalf("first writer: %d %v", rec.Code, rec.Header())
			}
		})
		t.Run("204terminate", func(t *testing.T) {
			if r := tusReq(s, farmer, http.MethodDelete, path, nil, nil); r.Status != http.StatusNoContent {
				t.Fatalf("delete: %d %s", r.Status, r.Body)
			}
			if r := tusReq(s, farmer, http.MethodHead, path, nil, nil); r.Status != http.StatusNotFound {
				t.Fatalf("head after delete: %d", r.Status)
			}
			if u, p := uploadRows(t, s); u != 0 || p != 0 {
				t.Fatalf("rows left: %d %d", u, p)
			}
			if got := e.objects(t); len(got) != 0 {
				t.Fatalf("store holds %v", got)
			}
		})
	})
}

// TestTus_ExpiryRemovesRowsAndBytes: an unfinished upload past
// files.resumable_ttl is swept, row and chunks.
func TestTus_ExpiryRemovesRowsAndBytes(t *testing.T) {
	forEach(t, func(c *config.Config) {
		c.Files.ResumableTTL = 2 * time.Second
		c.Files.SweepInterval = 200 * time.Millisecond
	}, func(t *testing.T, e *env) {
		content := pngContent(10000)
		path := tusCreate(t, e.Server, farmer, len(content), imageMeta("left.png"))
		mustPatch(t, e.Server, farmer, path, 0, content[:4000])
		// One of 5 MiB too: on S3 a multipart upload, aborted at expiry.
		big := pngContent(6 << 20)
		bigPath := tusCreate(t, e.Server, farmer, len(big), imageMeta("big.png"))
		mustPatch(t, e.Server, farmer, bigPath, 0, big[:5<<20])
		if got := e.objects(t); len(got) != 2 {
			t.Fatalf("store holds %v", got)
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			u, p := uploadRows(t, e.Server)
			if u == 0 && p == 0 && len(e.objects(t)) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("not swept: %d uploads %d parts, store %v", u, p, e.objects(t))
			}
			time.Sleep(100 * time.Millisecond)
		}
		if r := tusReq(e.Server, farmer, http.MethodHead, path, nil, nil); r.Status != http.StatusNotFound {
			t.Fatalf("head after expiry: %d", r.Status)
		}
		if r := tusPatch(e.Server, farmer, bigPath, 5<<20, big[5<<20:]); r.Status != http.StatusNotFound {
			t.Fatalf("patch after expiry: %d", r.Status)
		}
	})
}

// TestTus_423_DeadReplicaLeaseExpires: a replica that died mid-PATCH leaves
// its lease in the row; writers get 423 until it runs out, then carry on.
func TestTus_423_DeadReplicaLeaseExpires(t *testing.T) {
	forEach(t, nil, func(t *testing.T, e *env) {
		s := e.Server
		content := pngContent(20000)
		path := tusCreate(t, s, farmer, len(content), imageMeta("lease.png"))
		id := path[strings.LastIndex(path, "/")+1:]
		setLease := func(until time.Time) {
			if _, err := s.Platform.DB.NewUpdate().Table("system_uploads").Set("lease_token = ?", "dead0replica0lease").
				Set("lease_until = ?", until.UTC()).Where("id = ?", id).Exec(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		setLease(time.Now().Add(time.Minute))
		if r := tusPatch(s, farmer, path, 0, content[:5000]); r.Status != http.StatusLocked {
			t.Fatalf("while the dead lease runs: %d %s", r.Status, r.Body)
		}
		if n, _ := headOffset(t, s, farmer, path); n != 0 {
			t.Fatalf("offset %d", n)
		}
		setLease(time.Now().Add(-time.Second))
		mustPatch(t, s, farmer, path, 0, content[:5000])
		r := mustPatch(t, s, farmer, path, 5000, content[5000:])
		checkFile(t, s, farmer, r.Header.Get("Upload-File-Id"), content)
	})
}

// TestTus_5MiBChunks_StagedInTheStore: with chunks of 5 MiB the bytes are
// written once: local appends them to one scratch file, renamed into the
// file; S3 sends each as a part of one multipart upload at the file's key,
// completed with the last chunk. Same file, same hash, nothing left but the
// file; a refused last chunk leaves the upload as it was, a refused content
// removes it and its bytes.
func TestTus_5MiBChunks_StagedInTheStore(t *testing.T) {
	forEach(t, nil, func(t *testing.T, e *env) {
		s := e.Server
		const mib = 1 << 20
		content := pngContent(11*mib + 123)
		path := tusCreate(t, s, farmer, len(content), imageMeta("big.png"))
		mustPatch(t, s, farmer, path, 0, content[:5*mib])
		mustPatch(t, s, farmer, path, 5*mib, content[5*mib:10*mib])
		staged := func(t *testing.T) {
			t.Helper()
			got := e.objects(t)
			if len(got) != 1 || (isLocal(t) && !strings.HasSuffix(got[0], ".data")) || (!isLocal(t) && !strings.HasPrefix(got[0], "incomplete:images/")) {
				t.Fatalf("store holds %v, want the one staged upload", got)
			}
			if _, p := uploadRows(t, s); p != 0 {
				t.Fatalf("%d scratch chunks", p)
			}
		}
		staged(t)
		wrong := sha256.Sum256([]byte("x"))
		if r := tusPatch(s, farmer, path, 10*mib, content[10*mib:], "Upload-Checksum", "sha256 "+base64.StdEncoding.EncodeToString(wrong[:])); r.Status != 460 {
			t.Fatalf("bad last chunk: %d %s", r.Status, r.Body)
		}
		if n, _ := headOffset(t, s, farmer, path); n != 10*mib {
			t.Fatalf("offset %d", n)
		}
		staged(t)
		sum := sha256.Sum256(content[10*mib:])
		r := tusPatch(s, farmer, path, 10*mib, content[10*mib:], "Upload-Checksum", "sha256 "+base64.StdEncoding.EncodeToString(sum[:]))
		if r.Status != http.StatusNoContent || r.Header.Get("Upload-File-Id") == "" {
			t.Fatalf("last chunk: %d %v %s", r.Status, r.Header, r.Body)
		}
		id := r.Header.Get("Upload-File-Id")
		checkFile(t, s, farmer, id, content)
		if got := e.objects(t); len(got) != 1 || !strings.HasSuffix(got[0], id) {
			t.Fatalf("store holds %v", got)
		}
		// Text in the images bucket: 415 when the last chunk is in, and the
		// upload is gone with its bytes.
		text := bytes.Repeat([]byte("plain text, not a picture. "), 6*mib/27+1)
		p2 := tusCreate(t, s, farmer, len(text), imageMeta("fake.png"))
		mustPatch(t, s, farmer, p2, 0, text[:5*mib])
		if r := tusPatch(s, farmer, p2, 5*mib, text[5*mib:]); r.Status != http.StatusUnsupportedMediaType {
			t.Fatalf("text as image: %d %s", r.Status, r.Body)
		}
		if r := tusReq(s, farmer, http.MethodHead, p2, nil, nil); r.Status != http.StatusNotFound {
			t.Fatalf("refused upload: %d", r.Status)
		}
		if got := e.objects(t); len(got) != 1 {
			t.Fatalf("store holds %v", got)
		}
		if u, p := uploadRows(t, s); u != 1 || p != 0 {
			t.Fatalf("rows %d %d", u, p)
		}
	})
}

// cutPatch sends a PATCH that declares n bytes and breaks after half of
// them, as a connection lost mid-chunk does.
func cutPatch(s *testkit.Server, path string, offset int, chunk []byte) int {
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(chunk[:len(chunk)/2])
		_ = pw.CloseWithError(io.ErrUnexpectedEOF)
	}()
	req := httptest.NewRequest(http.MethodPatch, path, pr)
	req.ContentLength = int64(len(chunk))
	req.Header.Set("Authorization", "Bearer "+s.Token(farmer))
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Offset", strconv.Itoa(offset))
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	rec := httptest.NewRecorder()
	s.App.Engine.ServeHTTP(rec, req)
	return rec.Code
}

// TestTus_CutMidChunk_ResumedExact_TerminateAborts: a PATCH cut mid-way
// leaves the offset at the last whole chunk (local: the scratch file cut
// back; S3: the part not recorded); the chunk sent again makes a file with
// exact bytes and SHA-256. Terminating an upload removes its staged bytes:
// the scratch file, or the S3 multipart upload aborted (none listed).
func TestTus_CutMidChunk_ResumedExact_TerminateAborts(t *testing.T) {
	forEach(t, nil, func(t *testing.T, e *env) {
		s := e.Server
		const mib = 1 << 20
		content := pngContent(11*mib + 777)
		path := tusCreate(t, s, farmer, len(content), imageMeta("cut.png"))
		mustPatch(t, s, farmer, path, 0, content[:5*mib])
		if code := cutPatch(s, path, 5*mib, content[5*mib:10*mib]); code != http.StatusBadRequest {
			t.Fatalf("cut chunk: %d", code)
		}
		if n, _ := headOffset(t, s, farmer, path); n != 5*mib {
			t.Fatalf("offset after the cut %d, want %d", n, 5*mib)
		}
		if isLocal(t) {
			id := path[strings.LastIndex(path, "/")+1:]
			st, err := os.Stat(filepath.Join(s.Config.DataDir, "files", "resumable", id+".data"))
			if err != nil || st.Size() != 5*mib {
				t.Fatalf("scratch file after the cut: %v %v", st, err)
			}
		}
		// A cut last chunk too, then everything sent again.
		if code := cutPatch(s, path, 5*mib, content[5*mib:]); code != http.StatusBadRequest {
			t.Fatalf("cut last chunk: %d", code)
		}
		mustPatch(t, s, farmer, path, 5*mib, content[5*mib:10*mib])
		r := mustPatch(t, s, farmer, path, 10*mib, content[10*mib:])
		id := r.Header.Get("Upload-File-Id")
		checkFile(t, s, farmer, id, content)
		if got := e.objects(t); len(got) != 1 || !strings.HasSuffix(got[0], id) {
			t.Fatalf("store holds %v", got)
		}
		// Terminated mid-way: its bytes go, the finished file stays.
		p2 := tusCreate(t, s, farmer, len(content), imageMeta("gone.png"))
		mustPatch(t, s, farmer, p2, 0, content[:5*mib])
		if got := e.objects(t); len(got) != 2 {
			t.Fatalf("store holds %v, want the file and the staged upload", got)
		}
		if r := tusReq(s, farmer, http.MethodDelete, p2, nil, nil); r.Status != http.StatusNoContent {
			t.Fatalf("terminate: %d %s", r.Status, r.Body)
		}
		if got := e.objects(t); len(got) != 1 || !strings.HasSuffix(got[0], id) {
			t.Fatalf("after termination the store holds %v", got)
		}
		if u, p := uploadRows(t, s); u != 1 || p != 0 {
			t.Fatalf("rows %d %d", u, p)
		}
	})
}

// TestTus_UnstagedUpload_FinishesByReadBack: an upload without a reserved
// file key (made before migration 0035) goes on as scratch chunks read back
// as the body of an ordinary upload at the end: same file, nothing left.
func TestTus_UnstagedUpload_FinishesByReadBack(t *testing.T) {
	forEach(t, nil, func(t *testing.T, e *env) {
		s := e.Server
		content := pngContent(300 << 10)
		path := tusCreate(t, s, farmer, len(content), imageMeta("old.png"))
		id := path[strings.LastIndex(path, "/")+1:]
		if _, err := s.Platform.DB.NewUpdate().Table("system_uploads").Set("file_key = ''").Where("id = ?", id).Exec(t.Context()); err != nil {
			t.Fatal(err)
		}
		mustPatch(t, s, farmer, path, 0, content[:100<<10])
		mustPatch(t, s, farmer, path, 100<<10, content[100<<10:200<<10])
		if got := chunks(e.objects(t)); len(got) != 2 {
			t.Fatalf("store holds %v, want 2 scratch chunks", got)
		}
		r := mustPatch(t, s, farmer, path, 200<<10, content[200<<10:])
		checkFile(t, s, farmer, r.Header.Get("Upload-File-Id"), content)
		if got := e.objects(t); len(got) != 1 {
			t.Fatalf("store holds %v", got)
		}
		if _, p := uploadRows(t, s); p != 0 {
			t.Fatalf("%d part rows left", p)
		}
	})
}

// TestTus_MixedChunkSizes_ExactFile: chunks under 5 MiB between larger ones
// (on S3 they wait as scratch objects and lead the next part) make the same
// file, bytes and SHA-256, and leave nothing but it.
func TestTus_MixedChunkSizes_ExactFile(t *testing.T) {
	forEach(t, nil, func(t *testing.T, e *env) {
		s := e.Server
		const mib = 1 << 20
		content := pngContent(10*mib + 5000)
		path := tusCreate(t, s, farmer, len(content), imageMeta("mixed.png"))
		off := 0
		for _, n := range []int{1000, 5 * mib, 1000, 5 * mib, 3000} {
			r := mustPatch(t, s, farmer, path, off, content[off:off+n])
			off += n
			if off == len(content) {
				checkFile(t, s, farmer, r.Header.Get("Upload-File-Id"), content)
			}
		}
		if got := e.objects(t); len(got) != 1 {
			t.Fatalf("store holds %v", got)
		}
		if _, p := uploadRows(t, s); p != 0 {
			t.Fatalf("%d part rows left", p)
		}
	})
}

// TestTus_LastChunkAgain_SameFile: when the answer to the last chunk is lost
// after the file was made (the database failed to record it on the upload),
// the chunk sent again answers the same file: no second file, no second
// object.
func TestTus_LastChunkAgain_SameFile(t *testing.T) {
	forEach(t, nil, func(t *testing.T, e *env) {
		s := e.Server
		const mib = 1 << 20
		content := pngContent(6*mib + 99)
		path := tusCreate(t, s, farmer, len(content), imageMeta("again.png"))
		id := path[strings.LastIndex(path, "/")+1:]
		mustPatch(t, s, farmer, path, 0, content[:5*mib])
		var state string
		if err := s.Platform.DB.NewSelect().Table("system_uploads").Column("hash_state").Where("id = ?", id).Scan(t.Context(), &state); err != nil {
			t.Fatal(err)
		}
		r := mustPatch(t, s, farmer, path, 5*mib, content[5*mib:])
		file := r.Header.Get("Upload-File-Id")
		// The upload as it was before the last chunk, the file made.
		if _, err := s.Platform.DB.NewUpdate().Table("system_uploads").Set("received = ?", 5*mib).Set("file_id = ''").
			Set("hash_state = ?", state).Where("id = ?", id).Exec(t.Context()); err != nil {
			t.Fatal(err)
		}
		r = mustPatch(t, s, farmer, path, 5*mib, content[5*mib:])
		if got := r.Header.Get("Upload-File-Id"); got != file {
			t.Fatalf("again: file %s, want %s", got, file)
		}
		checkFile(t, s, farmer, file, content)
		n, err := s.Platform.DB.NewSelect().Table("platform_files").Count(t.Context())
		if err != nil || n != 1 {
			t.Fatalf("%d file records (%v)", n, err)
		}
		if got := e.objects(t); len(got) != 1 {
			t.Fatalf("store holds %v", got)
		}
	})
}
