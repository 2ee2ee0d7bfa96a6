package listings_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/agritrade/api/livestock/internal/categories"
	"github.com/agritrade/api/livestock/internal/listings"
	"github.com/agritrade/api/platform/testkit"
)

// BenchmarkCreate measures the listing create route, the hot path of the
// marketplace, through the real engine (auth, body checks, binding and
// validation, the insert) on SQLite, with the largest body (cattle).
func BenchmarkCreate(b *testing.B) {
	s := newServer(b, testkit.DB(b, testkit.SQLite))
	body, _ := json.Marshal(validBody("cattle"))
	token := s.Token(farmer)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest(http.MethodPost, createPath["cattle"], bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.App.Engine.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkCreateConcurrent measures creates sent by 16 goroutines at once
// through the real engine on SQLite, where the writers that meet at the write
// gate share a COMMIT (platform/db: group commit), with and without an
// Idempotency-Key (a fresh key each, so none is a replay: the key's row is
// written in the listing's transaction).
func BenchmarkCreateConcurrent(b *testing.B) {
	for _, keyed := range []bool{false, true} {
		b.Run(fmt.Sprintf("idempotency-key=%v", keyed), func(b *testing.B) {
			s := newServer(b, testkit.DB(b, testkit.SQLite))
			body, _ := json.Marshal(validBody("sheep"))
			token := s.Token(farmer)
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(16 / max(1, runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req := httptest.NewRequest(http.MethodPost, createPath["sheep"], bytes.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+token)
					req.Header.Set("Content-Type", "application/json")
					if keyed {
						req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-%d", n.Add(1)))
					}
					rec := httptest.NewRecorder()
					s.App.Engine.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK || rec.Header().Get("Idempotent-Replayed") != "" {
						b.Errorf("%d %s (replayed: %q)", rec.Code, rec.Body, rec.Header().Get("Idempotent-Replayed"))
						return
					}
				}
			})
		})
	}
}

// BenchmarkCreateParse measures binding and validating a create body alone
// (no HTTP, no database): what the binder costs.
func BenchmarkCreateParse(b *testing.B) {
	body, _ := json.Marshal(validBody("cattle"))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, f, err := listings.ParseDraft(categories.Cattle, body); err != nil || !f.Empty() {
			b.Fatalf("%v %v", err, f.List())
		}
	}
}
