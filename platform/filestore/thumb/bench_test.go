package thumb_test

import (
	"bytes"
	"testing"

	"github.com/agritrade/api/platform/filestore/thumb"
	"github.com/agritrade/api/platform/filestore/thumb/thumbtest"
)

// BenchmarkMake12MP: the first thumbnail of a 12-megapixel photo (4000 x
// 3000 JPEG, made once before the timer), per default size. Go's
// image/jpeg cannot scale while decoding (no DCT scaling), so the decode of
// all 12 M pixels is most of the time; see the report in the CHANGELOG.
func BenchmarkMake12MP(b *testing.B) {
	src := thumbtest.JPEG(thumbtest.Noisy(4000, 3000))
	b.Logf("source: %d bytes", len(src))
	for _, size := range []string{"100x100", "300x300", "600x0", "1200x0"} {
		spec, _ := thumb.Parse(size)
		b.Run(size, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := thumb.Make(bytes.NewReader(src), spec, 50_000_000); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
