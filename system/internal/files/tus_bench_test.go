package files_test

import (
	"encoding/base64"
	"fmt"
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
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/filestore/s3test"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
)

// BenchmarkResumableVsMultipart uploads the same generated files through the
// plain multipart upload and through tus in 5 MiB chunks (each PATCH
// streamed from the file), over a real HTTP connection, and prints the
// throughput of both and the memory the process gained meanwhile, for two
// sizes: the memory must not grow with the size. Sizes and backend from the
// environment: AGRITRADE_BENCH_TUS_MB (default 50; the second size is twice
// it), AGRITRADE_BENCH_TUS_CHUNK_MB (default 5), AGRITRADE_BENCH_TUS_REPS
// (default 5), AGRITRADE_BENCH_FILE_BACKEND
// (local or s3).
func BenchmarkResumableVsMultipart(b *testing.B) {
	mb := envInt("AGRITRADE_BENCH_TUS_MB", 50)
	chunk := int64(envInt("AGRITRADE_BENCH_TUS_CHUNK_MB", 5)) << 20
	backend := os.Getenv("AGRITRADE_BENCH_FILE_BACKEND")
	if backend == "" {
		backend = "local"
	}
	var configure func(c *config.Config)
	if backend == "s3" {
		srv := s3test.Start(b)
		bucket := srv.NewBucket(b)
		configure = func(c *config.Config) { srv.Configure(c, bucket) }
	}
	s := testkit.NewServer(b, testkit.DB(b, testkit.SQLite), func(p *app.Platform) []module.Module {
		return []module.Module{system.New(p.Deps(system.Name))}
	}, testkit.Options{NoValidate: true, Configure: func(c *config.Config) {
		c.Files.MaxUploadMB = int64(2*mb) + 1
		c.Log.Level = "warn"
		if configure != nil {
			configure(c)
		}
	}})
	hs := httptest.NewServer(s.App.Engine)
	b.Cleanup(hs.Close)
	token := s.Token(farmer)
	dir := b.TempDir()
	reps := envInt("AGRITRADE_BENCH_TUS_REPS", 5)

	for b.Loop() {
		fmt.Printf("\nresumable (tus, %d MiB chunks) vs multipart upload, %s backend, median of %d runs each\n", chunk>>20, backend, reps)
		fmt.Printf("  %-6s %-10s %10s %8s %16s %16s\n", "size", "upload", "MB/s", "secs", "peak RSS +MiB", "peak heap +MiB")
		for _, size := range []int64{int64(mb) << 20, int64(2*mb) << 20} {
			src := filepath.Join(dir, "source.bin")
			wantHash := writeRandomFile(b, src, size)
			mbps := func(secs float64) float64 { return float64(size) / (1 << 20) / secs }

			// The machine may be shared: both uploads run reps times, taking
			// turns, and the median time and the largest memory growth count.
			var plainT, tusT []float64
			var plainRSS, plainHeap, tusRSS, tusHeap int64
			for range reps {
				mem := startSampler()
				start := time.Now()
				uploadFile(b, hs.URL, token, src)
				plainT = append(plainT, time.Since(start).Seconds())
				r, h := mem.stop()
				plainRSS, plainHeap = max(plainRSS, r), max(plainHeap, h)

				mem = startSampler()
				start = time.Now()
				id := tusUploadFile(b, hs.URL, token, src, size, chunk)
				tusT = append(tusT, time.Since(start).Seconds())
				r, h = mem.stop()
				tusRSS, tusHeap = max(tusRSS, r), max(tusHeap, h)
				if got := downloadFile(b, hs.URL, token, id, filepath.Join(dir, "download.bin")); got != wantHash {
					b.Fatalf("resumable upload hash %s, want %s", got, wantHash)
				}
			}
			plainSecs, tusSecs := median(plainT), median(tusT)
			row := func(name string, secs float64, rss, heap int64) {
				fmt.Printf("  %-6s %-10s %10.1f %8.2f %16.1f %16.1f\n", fmt.Sprintf("%dMiB", size>>20), name, mbps(secs), secs, float64(rss)/(1<<20), float64(heap)/(1<<20))
			}
			row("multipart", plainSecs, plainRSS, plainHeap)
			row("tus", tusSecs, tusRSS, tusHeap)
			fmt.Printf("  %-6s tus/multipart throughput: %.2fx\n", "", plainSecs/tusSecs)
			if size == int64(mb)<<20 {
				b.ReportMetric(mbps(tusSecs), "tus-MB/s")
				b.ReportMetric(mbps(plainSecs), "multipart-MB/s")
				b.ReportMetric(plainSecs/tusSecs, "tus/multipart")
			}
			_ = os.Remove(src)
		}
	}
}

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// tusUploadFile creates an upload and sends the file in chunks, each PATCH
// streamed from its section of the file; it answers the file id.
func tusUploadFile(b *testing.B, base, token, path string, size, chunk int64) string {
	b.Helper()
	meta := "bucket " + base64.StdEncoding.EncodeToString([]byte("files")) + ",type " + base64.StdEncoding.EncodeToString([]byte("misc")) +
		",name " + base64.StdEncoding.EncodeToString([]byte("large.pdf"))
	status, hdr := tusDo(b, http.MethodPost, base+uploadsPath, token, nil, 0, map[string]string{"Upload-Length": strconv.FormatInt(size, 10), "Upload-Metadata": meta})
	if status != http.StatusCreated {
		b.Fatalf("create: %d", status)
	}
	loc := hdr.Get("Location")
	url := base + loc[strings.Index(loc, uploadsPath):]
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var id string
	for off := int64(0); off < size; off += chunk {
		n := min(chunk, size-off)
		status, hdr := tusDo(b, http.MethodPatch, url, token, io.NewSectionReader(f, off, n), n, map[string]string{"Upload-Offset": strconv.FormatInt(off, 10)})
		if status != http.StatusNoContent {
			b.Fatalf("patch at %d: %d", off, status)
		}
		id = hdr.Get("Upload-File-Id")
	}
	if id == "" {
		b.Fatal("no Upload-File-Id after the last chunk")
	}
	return id
}

func tusDo(b *testing.B, method, url, token string, body io.Reader, n int64, hdr map[string]string) (int, http.Header) {
	b.Helper()
	req, _ := http.NewRequest(method, url, body)
	req.ContentLength = n
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Tus-Resumable", "1.0.0")
	if body != nil {
		req.Header.Set("Content-Type", "application/offset+octet-stream")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, res.Header
}
