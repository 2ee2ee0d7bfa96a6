package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// TestGovernProcs_OffOrOperatorsNumber: serve runs the GOMAXPROCS governor
// unless runtime.adaptive_procs is off or GOMAXPROCS is in the environment.
func TestGovernProcs_OffOrOperatorsNumber(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	for _, c := range []struct {
		name string
		on   bool
		env  map[string]string
		want bool
	}{
		{"on", true, nil, true},
		{"off in the configuration", false, nil, false},
		{"GOMAXPROCS set", true, map[string]string{"GOMAXPROCS": "2"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			got := governProcs(ctx, &wg, c.on, func(k string) string { return c.env[k] }, log)
			cancel()
			wg.Wait()
			if got != c.want {
				t.Fatalf("governProcs started: %v; want %v", got, c.want)
			}
		})
	}
}

var gomaxprocsMetric = regexp.MustCompile(`(?m)^go_sched_gomaxprocs_threads (\d+)$`)

// metricsOf reads /metrics of p.
func metricsOf(t *testing.T, p *process, admin string) []byte {
	t.Helper()
	status, _, body := p.call(t, http.MethodGet, "/metrics", admin, "")
	if status != http.StatusOK {
		t.Fatalf("/metrics: %d", status)
	}
	return body
}

func gomaxprocsOf(t *testing.T, metrics []byte) int {
	t.Helper()
	m := gomaxprocsMetric.FindSubmatch(metrics)
	if m == nil {
		t.Fatal("/metrics has no go_sched_gomaxprocs_threads")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// TestServe_GOMAXPROCSFollowsTheLoad: an idle server runs on one processor,
// an upload (read, written and hashed on three goroutines) gets them all at
// once, and the metrics say so; with the governor off, or GOMAXPROCS set,
// the runtime's number stays.
func TestServe_GOMAXPROCSFollowsTheLoad(t *testing.T) {
	if runtime.NumCPU() < 2 || os.Getenv("GOMAXPROCS") != "" {
		t.Skip("needs two processors and no GOMAXPROCS in the environment")
	}
	data := t.TempDir()
	env := []string{"AGRITRADE_DATA_DIR=" + data}
	p := serve(t, env...)
	admin := mint(t, env, "--sub", "U1", "--org", "O1", "--roles", "admin", "--ttl", "1h")

	waitUntil := func(what string, cond func(metrics []byte) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			m := metricsOf(t, p, admin)
			if cond(m) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not reached; metrics:\n%s", what, grepGOMAXPROCS(m))
			}
			// Not more often: on one processor, requests that average
			// more than 200 µs of CPU (a scrape of /metrics is one) raise
			// the level once they use a tenth of a core, and a slow
			// machine's scrape may take 10 ms.
			time.Sleep(400 * time.Millisecond)
		}
	}
	waitUntil("one processor while idle", func(m []byte) bool {
		return gomaxprocsOf(t, m) == 1 && bytes.Contains(m, []byte(`agritrade_gomaxprocs_changes_total{reason="idle"}`))
	})

	// The scrapes above are behind the governor's window of heavy requests
	// (100 ms): what raises the level now is the upload.
	time.Sleep(300 * time.Millisecond)
	up := multipartFile(t, map[string]string{"bucket": "files", "type": "misc", "name": "field.bin"}, "field.bin", bytes.Repeat([]byte("pasture "), 512<<10))
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, p.base+"/system/v1/files", bytes.NewReader(up.body))
	req.Header.Set("Content-Type", up.ctype)
	req.Header.Set("Authorization", "Bearer "+admin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("upload: %d", res.StatusCode)
	}
	m := metricsOf(t, p, admin)
	if !bytes.Contains(m, []byte(`agritrade_gomaxprocs_changes_total{reason="parallel"} 1`)) {
		t.Fatalf("the upload did not raise GOMAXPROCS; metrics:\n%s", grepGOMAXPROCS(m))
	}
	waitUntil("one processor again after the upload", func(m []byte) bool { return gomaxprocsOf(t, m) == 1 })

	for name, extra := range map[string]string{"adaptive_procs off": "AGRITRADE_RUNTIME_ADAPTIVE_PROCS=false", "GOMAXPROCS set": "GOMAXPROCS=2"} {
		t.Run(name, func(t *testing.T) {
			data := t.TempDir()
			env := []string{"AGRITRADE_DATA_DIR=" + data, extra}
			q := serve(t, env...)
			admin := mint(t, env, "--sub", "U1", "--org", "O1", "--roles", "admin", "--ttl", "1h")
			time.Sleep(3 * time.Second) // an idle governor lowers within ~1.3 s
			m := metricsOf(t, q, admin)
			if got := gomaxprocsOf(t, m); got < 2 || bytes.Contains(m, []byte("agritrade_gomaxprocs_changes_total{")) {
				t.Fatalf("GOMAXPROCS %d, changes counted; want the runtime's number and none:\n%s", got, grepGOMAXPROCS(m))
			}
		})
	}
}

func grepGOMAXPROCS(metrics []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(metrics, []byte("\n")) {
		if bytes.Contains(line, []byte("gomaxprocs")) {
			out = append(append(out, line...), '\n')
		}
	}
	return out
}
