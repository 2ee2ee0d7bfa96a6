package shortlinks_test

import (
	"net/http"
	"testing"

	"github.com/agritrade/api/platform/testkit"
)

// BenchmarkFollow measures one redirect with its visit counted (a transaction
// per visit) through the real engine.
func BenchmarkFollow(b *testing.B) {
	for _, d := range []testkit.Dialect{testkit.SQLite, testkit.Postgres} {
		b.Run(string(d), func(b *testing.B) {
			s := newServer(b, testkit.DB(b, d), nil)
			r := s.Do(testkit.Request{Method: http.MethodPost, Path: "/system/v1/short-urls", JSON: map[string]any{"template": "default", "url": "https://agritrade.example/x"}})
			var c struct{ Code string }
			r.Decode(b, &c)
			ua := map[string]string{"User-Agent": "Mozilla/5.0 (iPhone) Mobile", "Referer": "https://news.example.org/a"}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if r := s.Do(testkit.Request{Method: http.MethodGet, Path: "/s/" + c.Code, Header: ua}); r.Status != http.StatusFound {
					b.Fatal(r.Status)
				}
			}
		})
	}
}
