package main

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
)

// BenchmarkIdempotency measures what an Idempotency-Key costs on the issue's
// workload C (POST /livestock/v1/listings/sheep: validate and insert one
// listing) through the real engine over SQLite: "none" sends no key (the
// middleware's only work is one header lookup), "key" a new key per request
// (the body hashed, the key's row inserted with the answer in the listing's
// transaction), "replay" the same key and body every time (the handler runs
// up to its transaction, meets the key's row there and rolls back; the kept
// answer goes out).
// cpu-ns/op is the whole process's CPU time per request (getrusage); on
// PostgreSQL (sub-benchmarks pg/…, when AGRITRADE_TEST_POSTGRES_DSN is set)
// the server's own CPU is not in it.
//
//	go test -run '^$' -bench '^BenchmarkIdempotency$' -benchmem -benchtime 2000x -count 3 github.com/agritrade/api/cmd/agritrade
func BenchmarkIdempotency(b *testing.B) {
	for _, d := range []testkit.Dialect{testkit.SQLite, testkit.Postgres} {
		for _, mode := range []string{"none", "key", "replay"} {
			name := "C/" + mode
			if d == testkit.Postgres {
				name = "pg/" + name
			}
			b.Run(name, func(b *testing.B) { benchIdempotency(b, d, mode) })
		}
	}
}

func benchIdempotency(b *testing.B, d testkit.Dialect, mode string) {
	s := testkit.NewServer(b, testkit.DB(b, d), func(p *app.Platform) []module.Module { return buildModules(p) },
		testkit.Options{NoValidate: true, Configure: func(c *config.Config) { c.Log.Level = "warn" }})
	req := benchRequest(b, s, "C")
	request := func(i int) *http.Request {
		r := req()
		switch mode {
		case "key":
			r.Header.Set("Idempotency-Key", "bench-"+strconv.Itoa(i))
		case "replay":
			r.Header.Set("Idempotency-Key", "bench-replay")
		}
		return r
	}
	if res := serveBench(s, request(-1)); res.Code != http.StatusOK {
		b.Fatalf("%d %s", res.Code, res.Body)
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := serveBench(s, request(i)); res.Code != http.StatusOK {
			b.Fatalf("%d %s", res.Code, res.Body)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
