package listings_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
