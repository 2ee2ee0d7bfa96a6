package loads_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	lt "github.com/agritrade/api/logistics/internal/logisticstest"
	"github.com/agritrade/api/platform/testkit"
)

// BenchmarkCSVExport streams every load of the organiser as CSV through the
// engine on each dialect; rows/s is reported (-benchmem shows the allocation
// per export, which does not grow with the rows held in memory).
func BenchmarkCSVExport(b *testing.B) {
	const n = 5000
	for _, d := range []testkit.Dialect{testkit.SQLite, testkit.Postgres} {
		b.Run(string(d), func(b *testing.B) {
			s := lt.NewServer(b, testkit.DB(b, d), testkit.Options{NoValidate: true})
			for start := 0; start < n; start += 1000 {
				forms := make([]map[string]any, 0, 1000)
				for i := start; i < start+1000; i++ {
					forms = append(forms, lt.LoadForm(lt.Ref("CSV", i)))
				}
				lt.Create(b, s, lt.Organiser, forms...)
			}
			req := s.NewRequest(testkit.Request{Method: http.MethodGet, Path: loadsPath + "?format=csv", Token: s.Token(lt.Organiser)})
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rec := httptest.NewRecorder()
				s.App.Engine.ServeHTTP(rec, req)
				if rec.Code != 200 || bytes.Count(rec.Body.Bytes(), []byte{'\n'}) != n+1 {
					b.Fatalf("export: %d, %d lines", rec.Code, bytes.Count(rec.Body.Bytes(), []byte{'\n'}))
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkSearch times a first page of the search on each dialect over
// 5,000 loads, with and without a text query.
func BenchmarkSearch(b *testing.B) {
	const n = 5000
	for _, d := range []testkit.Dialect{testkit.SQLite, testkit.Postgres} {
		b.Run(string(d), func(b *testing.B) {
			s := lt.NewServer(b, testkit.DB(b, d), testkit.Options{NoValidate: true})
			for start := 0; start < n; start += 1000 {
				forms := make([]map[string]any, 0, 1000)
				for i := start; i < start+1000; i++ {
					forms = append(forms, with(lt.LoadForm(lt.Ref("S", i)), "ticketNumber", lt.Ref("WB", i)))
				}
				lt.Create(b, s, lt.Organiser, forms...)
			}
			for _, q := range []string{"", "query=wb-0042", "sortBy=reference&sortDesc=true&offset=2000"} {
				b.Run("q="+q, func(b *testing.B) {
					req := s.NewRequest(testkit.Request{Method: http.MethodGet, Path: loadsPath + "?" + q, Token: s.Token(lt.Organiser)})
					for i := 0; i < b.N; i++ {
						rec := httptest.NewRecorder()
						s.App.Engine.ServeHTTP(rec, req)
						if rec.Code != 200 {
							b.Fatalf("search: %d", rec.Code)
						}
					}
				})
			}
		})
	}
}
