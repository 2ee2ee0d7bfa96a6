package files_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/filestore/s3test"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
)

// BenchmarkLargeFile streams a generated file through the real upload
// handler over a real HTTP connection, downloads it back, and prints the
// throughput next to a plain `cp` of the same file and the memory the
// process gained meanwhile (client and server share the process, so the
// figure covers both). Size and backend come from the environment:
// AGRITRADE_BENCH_FILE_MB (default 64; bench/files.sh uses 1024) and
// AGRITRADE_BENCH_FILE_BACKEND (local or s3).
func BenchmarkLargeFile(b *testing.B) {
	mb := envInt("AGRITRADE_BENCH_FILE_MB", 64)
	backend := os.Getenv("AGRITRADE_BENCH_FILE_BACKEND")
	if backend == "" {
		backend = "local"
	}
	size := int64(mb) << 20
	dir := b.TempDir()
	src := filepath.Join(dir, "source.bin")
	wantHash := writeRandomFile(b, src, size)

	cpSecs, cpSyncSecs := timeCp(b, src, filepath.Join(dir, "copy.bin"))

	var configure func(c *config.Config)
	if backend == "s3" {
		srv := s3test.Start(b)
		bucket := srv.NewBucket(b)
		configure = func(c *config.Config) { srv.Configure(c, bucket) }
	}
	s := testkit.NewServer(b, testkit.DB(b, testkit.SQLite), func(p *app.Platform) []module.Module {
		return []module.Module{system.New(p.Deps(system.Name))}
	}, testkit.Options{NoValidate: true, Configure: func(c *config.Config) {
		c.Files.MaxUploadMB = int64(mb) + 1
		c.Log.Level = "warn"
		if configure != nil {
			configure(c)
		}
	}})
	hs := httptest.NewServer(s.App.Engine)
	b.Cleanup(hs.Close)
	token := s.Token(farmer)

	for b.Loop() {
		mem := startSampler()
		start := time.Now()
		id := uploadFile(b, hs.URL, token, src)
		upSecs := time.Since(start).Seconds()
		upRSS, upHeap := mem.stop()

		mem = startSampler()
		start = time.Now()
		gotHash := downloadFile(b, hs.URL, token, id, filepath.Join(dir, "download.bin"))
		downSecs := time.Since(start).Seconds()
		downRSS, downHeap := mem.stop()
		if gotHash != wantHash {
			b.Fatalf("download hash %s, want %s", gotHash, wantHash)
		}

		mbps := func(secs float64) float64 { return float64(size) / (1 << 20) / secs }
		b.ReportMetric(mbps(upSecs), "upload-MB/s")
		b.ReportMetric(mbps(downSecs), "download-MB/s")
		b.ReportMetric(float64(upRSS)/(1<<20), "upload-peak-RSS-growth-MiB")
		fmt.Printf("\nfile store: %s backend, %d MiB file (SHA-256 %s...)\n", backend, mb, wantHash[:12])
		fmt.Printf("  cp                 %8.1f MB/s  (%.2fs)\n", mbps(cpSecs), cpSecs)
		fmt.Printf("  cp + fsync         %8.1f MB/s  (%.2fs)\n", mbps(cpSyncSecs), cpSyncSecs)
		fmt.Printf("  upload (HTTP)      %8.1f MB/s  (%.2fs; multipart parse, SHA-256, sniff, store (local: write + fsync), record)\n", mbps(upSecs), upSecs)
		fmt.Printf("  download (HTTP)    %8.1f MB/s  (%.2fs; to a file, hash checked)\n", mbps(downSecs), downSecs)
		fmt.Printf("  memory during upload:   peak RSS +%.1f MiB, peak heap in use +%.1f MiB\n", float64(upRSS)/(1<<20), float64(upHeap)/(1<<20))
		fmt.Printf("  memory during download: peak RSS +%.1f MiB, peak heap in use +%.1f MiB\n", float64(downRSS)/(1<<20), float64(downHeap)/(1<<20))
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// writeRandomFile writes size pseudo-random bytes (incompressible, cheap to
// make) after a PDF signature, so that the files bucket takes it.
func writeRandomFile(b *testing.B, path string, size int64) string {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	rng := rand.NewChaCha8([32]byte{42})
	buf := make([]byte, 1<<20)
	copy(buf, "%PDF-1.7\n")
	for written := int64(0); written < size; {
		if written > 0 {
			_, _ = rng.Read(buf)
		} else {
			_, _ = rng.Read(buf[9:])
		}
		n := min(int64(len(buf)), size-written)
		if _, err := w.Write(buf[:n]); err != nil {
			b.Fatal(err)
		}
		written += n
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// timeCp times `cp` of the file, then the same followed by an fsync of the
// copy (the upload syncs what it stores, cp does not).
func timeCp(b *testing.B, src, dst string) (plain, synced float64) {
	b.Helper()
	run := func(sync bool) float64 {
		_ = os.Remove(dst)
		start := time.Now()
		if out, err := exec.Command("cp", src, dst).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v %s", err, out)
		}
		if sync {
			f, err := os.OpenFile(dst, os.O_RDWR, 0)
			if err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		d := time.Since(start).Seconds()
		_ = os.Remove(dst)
		return d
	}
	return run(false), run(true)
}

// uploadFile streams the file as a multipart body (io.Pipe: never in memory).
func uploadFile(b *testing.B, base, token, path string) string {
	b.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			for _, f := range [][2]string{{"bucket", "files"}, {"type", "misc"}, {"name", "large.pdf"}} {
				if err := mw.WriteField(f[0], f[1]); err != nil {
					return err
				}
			}
			fw, err := mw.CreateFormFile("file", "large.pdf")
			if err != nil {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := io.Copy(fw, f); err != nil {
				return err
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	req, _ := http.NewRequest(http.MethodPost, base+filesPath, pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		b.Fatalf("upload: %d %s", res.StatusCode, body)
	}
	var rec struct{ ID string }
	if err := json.Unmarshal(body, &rec); err != nil {
		b.Fatal(err)
	}
	return rec.ID
}

func downloadFile(b *testing.B, base, token, id, dst string) string {
	b.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+filesPath+"/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b.Fatalf("download: %d", res.StatusCode)
	}
	f, err := os.Create(dst)
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(dst)
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), res.Body); err != nil {
		b.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sampler records the peak resident set size (from /proc) and the peak heap
// in use above what they were when it started.
type sampler struct {
	baseRSS, baseHeap int64
	peakRSS, peakHeap atomic.Int64
	done              chan struct{}
	wg                sync.WaitGroup
}

func startSampler() *sampler {
	// Hand freed memory back first, so that the baseline is what is really
	// in use and reusing already-resident pages cannot hide growth.
	debug.FreeOSMemory()
	s := &sampler{baseRSS: rss(), baseHeap: heapInUse(), done: make(chan struct{})}
	s.peakRSS.Store(s.baseRSS)
	s.peakHeap.Store(s.baseHeap)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
			if r := rss(); r > s.peakRSS.Load() {
				s.peakRSS.Store(r)
			}
			if i%10 == 0 { // ReadMemStats stops the world: sample it less often
				if h := heapInUse(); h > s.peakHeap.Load() {
					s.peakHeap.Store(h)
				}
			}
		}
	}()
	return s
}

func (s *sampler) stop() (rssGrowth, heapGrowth int64) {
	close(s.done)
	s.wg.Wait()
	return s.peakRSS.Load() - s.baseRSS, s.peakHeap.Load() - s.baseHeap
}

// rss reads the resident set size of the process (Linux; 0 elsewhere).
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func heapInUse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}
