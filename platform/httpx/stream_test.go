package httpx_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"

	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/logging"
	"github.com/gin-gonic/gin"
)

// fileSource is a download body as the file store makes one: it hands its
// file to a writer's ReadFrom when the writer has one, and tells whether it
// did.
type fileSource struct {
	f        *os.File
	readFrom bool
}

func (s *fileSource) Read(p []byte) (int, error) { return s.f.Read(p) }

func (s *fileSource) WriteTo(w io.Writer) (int64, error) {
	if rf, ok := w.(io.ReaderFrom); ok {
		s.readFrom = true
		return rf.ReadFrom(s.f)
	}
	return io.Copy(w, struct{ io.Reader }{s.f})
}

// countingWriter is a middleware's wrapper of gin's writer: it counts what it
// is given, and unwraps to gin's writer for http.ResponseController.
type countingWriter struct {
	gin.ResponseWriter
	n int
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return w.ResponseWriter.Write(p)
}

// streamed serves a file of size bytes at /system/v1/file, and behind a
// middleware that wraps the writer at /system/v1/wrapped/file.
func streamed(t *testing.T, size int) (url string, data []byte, src func() *fileSource, wrapped *countingWriter, log *bytes.Buffer) {
	t.Helper()
	data = bytes.Repeat([]byte("0123456789abcdef"), size/16)
	path := t.TempDir() + "/f"
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	log = &bytes.Buffer{}
	reg, err := logging.NewRegistry(log, "json", "info")
	if err != nil {
		t.Fatal(err)
	}
	e := httpx.NewEngine(httpx.Options{Log: reg.Module("platform"), Version: "platform/1.0.0"})
	g := e.Group("/system/v1", httpx.Scope(reg.Module("system"), "1.2.3"))
	var last *fileSource
	serve := func(c *gin.Context) {
		f, err := os.Open(path)
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { _ = f.Close() }()
		last = &fileSource{f: f}
		c.Header("Content-Length", strconv.Itoa(len(data)))
		c.Status(http.StatusOK)
		if _, err := httpx.Stream(c, last); err != nil {
			t.Error(err)
		}
	}
	g.GET("/file", serve)
	wrapped = &countingWriter{}
	g.GET("/wrapped/file", func(c *gin.Context) {
		wrapped.ResponseWriter = c.Writer
		c.Writer = wrapped
		c.Next()
	}, serve)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv.URL, data, func() *fileSource { return last }, wrapped, log
}

func getAll(t *testing.T, url string) []byte {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v", res.StatusCode, err)
	}
	return body
}

// TestStream_200_AFileGoesToTheServersReadFromAndIsLogged: under gin's own
// writer the source is handed the server's ReadFrom (where net/http's
// sendfile is), and the access line counts the bytes gin did not write.
func TestStream_200_AFileGoesToTheServersReadFromAndIsLogged(t *testing.T) {
	url, data, src, _, log := streamed(t, 1<<20)
	if got := getAll(t, url+"/system/v1/file"); !bytes.Equal(got, data) {
		t.Fatalf("got %d bytes, not the file's %d", len(got), len(data))
	}
	if !src().readFrom {
		t.Fatal("the file was not handed to the server's ReadFrom")
	}
	ls := lines(t, log)
	if access := ls[len(ls)-1]; access["msg"] != "request" || access["bytes"] != float64(len(data)) {
		t.Fatalf("access line %v, want bytes %d", access, len(data))
	}
}

// TestStream_200_AWrappedWriterSeesEveryByte: when a middleware wrapped gin's
// writer, every byte goes through the wrapper's Write, never past it.
func TestStream_200_AWrappedWriterSeesEveryByte(t *testing.T) {
	url, data, src, wrapped, log := streamed(t, 256<<10)
	if got := getAll(t, url+"/system/v1/wrapped/file"); !bytes.Equal(got, data) {
		t.Fatalf("got %d bytes, not the file's %d", len(got), len(data))
	}
	if src().readFrom {
		t.Fatal("the file went past the middleware's writer")
	}
	if wrapped.n != len(data) {
		t.Fatalf("the middleware's writer saw %d bytes of %d", wrapped.n, len(data))
	}
	ls := lines(t, log)
	if access := ls[len(ls)-1]; access["bytes"] != float64(len(data)) {
		t.Fatalf("access line %v, want bytes %d", access, len(data))
	}
}
