package imports_test

import (
	"bytes"
	"fmt"
	"testing"

	lt "github.com/agritrade/api/logistics/internal/logisticstest"
	"github.com/agritrade/api/platform/testkit"
)

// BenchmarkBatchUpload uploads a file of new loads per iteration through the
// engine (multipart, tabular, upsert) on each dialect; rows/s is reported.
func BenchmarkBatchUpload(b *testing.B) {
	const rows = 2000
	for _, d := range []testkit.Dialect{testkit.SQLite, testkit.Postgres} {
		b.Run(string(d), func(b *testing.B) {
			s := lt.NewServer(b, testkit.DB(b, d), testkit.Options{NoValidate: true})
			token := s.Token(lt.Organiser)
			files := make([][]byte, b.N)
			for n := range files {
				var buf bytes.Buffer
				buf.WriteString(header)
				for i := 0; i < rows; i++ {
					fmt.Fprintf(&buf, ",,1,%s,2026-%02d-%02d,%d,,WB-%d,AB12 CDE,CB1 2AB,PE1 1AA,bench\n", lt.Ref(fmt.Sprintf("B%d", n), i), 1+i%12, 1+i%28, i, i)
				}
				files[n] = buf.Bytes()
			}
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				r := s.Do(upload(b, token, "bench.csv", files[n]))
				if r.Status != 200 {
					b.Fatalf("upload: %d %s", r.Status, r.Body[:200])
				}
			}
			b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
