package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
)

// BenchmarkTracing measures the cost of tracing on the workloads G
// (GET /system/v1/settings, the ~30 KB settings document) and C (POST
// /livestock/v1/listings/sheep, validate and insert one listing) through the
// real engine over SQLite, with tracing off (no endpoint) and on (the
// default sampler, OTLP/HTTP batches to a local receiver that discards
// them). Requests run one after another in process; cpu-ns/op is the whole
// process's CPU time per request (getrusage), so the span exporter's own
// goroutines are counted too. The file also runs unchanged on a tree without
// tracing (the off variant is the baseline there).
//
//	go test -run '^$' -bench '^BenchmarkTracing$' -benchmem -count 5 github.com/agritrade/api/cmd/agritrade
func BenchmarkTracing(b *testing.B) {
	for _, w := range []string{"G", "C"} {
		for _, mode := range []string{"off", "on"} {
			b.Run(w+"/"+mode, func(b *testing.B) {
				b.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
				b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
				if mode == "on" {
					b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", discardReceiver(b))
				}
				s := testkit.NewServer(b, testkit.DB(b, testkit.SQLite), func(p *app.Platform) []module.Module { return buildModules(p) },
					testkit.Options{NoValidate: true, Configure: func(c *config.Config) { c.Log.Level = "warn" }})
				req := benchRequest(b, s, w)
				if res := serveBench(s, req()); res.Code != http.StatusOK && res.Code != http.StatusCreated {
					b.Fatalf("%s: %d %s", w, res.Code, res.Body)
				}
				b.ReportAllocs()
				cpu0 := processCPU()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if res := serveBench(s, req()); res.Code >= 300 {
						b.Fatalf("%s: %d %s", w, res.Code, res.Body)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

func serveBench(s *testkit.Server, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	s.App.Engine.ServeHTTP(rec, r)
	return rec
}

// benchRequest answers a maker of the workload's request.
func benchRequest(b *testing.B, s *testkit.Server, w string) func() *http.Request {
	farmer := auth.Principal{UserID: "user-bench", Name: "Bench Farmer", OrgID: "org-bench", OrgName: "Bench Farm", Orgs: []string{"org-bench"}}
	token := "Bearer " + s.Token(farmer)
	if w == "G" {
		return func() *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/system/v1/settings", nil)
			r.Header.Set("Authorization", token)
			return r
		}
	}
	body, err := json.Marshal(map[string]any{
		"type": "selling", "isDraft": false, "price": map[string]any{"type": "fixed", "pricePerUnit": map[string]any{"amount": 120, "currency": "GBP"}, "minPrice": nil, "maxPrice": nil},
		"location": map[string]any{"threeWordAddress": "filled.count.soap",
			"address": map[string]any{"name": "Home Farm", "line1": "1 Farm Lane", "line2": "", "line3": "", "city": "Thirsk",
				"region": "North Yorkshire", "regionISO": "GB-NYK", "postcode": "YO7 1AA", "countryName": "United Kingdom", "countryISO": "GB"},
			"coordinates": map[string]any{"lat": 54.2325, "lon": -1.3434}},
		"files": nil, "description": "Good sort, well grown", "tags": []string{"spring"}, "categoryIds": []int{1, 101, 150},
		"properties": map[string]any{"breedType": "texel", "type": []string{"store"}, "additionalInfo": []string{"pedigree"}, "sexes": "ewes"},
	})
	if err != nil {
		b.Fatal(err)
	}
	return func() *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/livestock/v1/listings/sheep", bytes.NewReader(body))
		r.Header.Set("Authorization", token)
		r.Header.Set("Content-Type", "application/json")
		return r
	}
}

// discardReceiver is an OTLP/HTTP endpoint that reads each export and
// answers success, as a collector would, without keeping anything.
func discardReceiver(b *testing.B) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

// processCPU is the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
