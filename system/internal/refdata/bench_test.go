package refdata_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/testkit"
)

// BenchmarkSettings measures GET /system/v1/settings through the real engine
// (request id, access log, metrics, error middleware, JWT verification, cache
// lookup, ETag) against a bare net/http handler writing the same bytes, both
// over real TCP with keep-alive, and reports requests per second of each and
// their ratio (engine/bare). Run: go test -run XXX -bench Settings ./system/internal/refdata/
func BenchmarkSettings(b *testing.B) {
	s, _ := newServer(b, testkit.DB(b, testkit.SQLite), testkit.Options{NoValidate: true, Configure: func(c *config.Config) { c.Log.Level = "warn" }})
	token := s.Token(testkit.Farmer)
	warm := s.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/settings", Token: token})
	if warm.Status != http.StatusOK {
		b.Fatalf("settings: %d", warm.Status)
	}
	body, etag := warm.Body, warm.Header.Get("ETag")
	bare := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("ETag", etag)
		h.Set("Cache-Control", "private, max-age=300")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	})
	rps := map[string]float64{}
	var mu sync.Mutex
	for _, c := range []struct {
		name    string
		handler http.Handler
	}{{"engine", s.App.Engine}, {"bare", bare}} {
		b.Run(c.name, func(b *testing.B) {
			srv := httptest.NewServer(c.handler)
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			defer client.CloseIdleConnections()
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest(http.MethodGet, srv.URL+"/system/v1/settings", nil)
					req.Header.Set("Authorization", "Bearer "+token)
					res, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					n, _ := io.Copy(io.Discard, res.Body)
					_ = res.Body.Close()
					if res.StatusCode != http.StatusOK || n != int64(len(body)) {
						b.Errorf("status %d, %d bytes", res.StatusCode, n)
						return
					}
				}
			})
			r := float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(r, "req/s")
			mu.Lock()
			rps[c.name] = r
			mu.Unlock()
		})
	}
	if rps["bare"] > 0 && rps["engine"] > 0 {
		b.Logf("settings document %d bytes: engine %.0f req/s, bare net/http %.0f req/s, ratio engine/bare %.2f",
			len(body), rps["engine"], rps["bare"], rps["engine"]/rps["bare"])
	}
}
