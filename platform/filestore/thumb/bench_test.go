package thumb_test

import (
	"bytes"
	"syscall"
	"testing"
	"time"

	"github.com/agritrade/api/platform/filestore/thumb"
	"github.com/agritrade/api/platform/filestore/thumb/thumbtest"
)

// BenchmarkMake12MP: the first thumbnail of a 12-megapixel photo (4000 x
// 3000 JPEG, made once before the timer), per default size, and all four
// from one decode (MakeAll, as at upload). The JPEG is decoded at the
// smallest scale each size allows (1/8 for 100x100 and 300x300, 1/4 for
// 600x0, 1/2 for 1200x0); the entropy decoding of every coefficient is the
// floor. cpu-ms/op is the process's CPU time per thumbnail (user + system),
// steadier than ns/op on a shared machine; see the report in the CHANGELOG.
func BenchmarkMake12MP(b *testing.B) {
	src := thumbtest.JPEG(thumbtest.Noisy(4000, 3000))
	b.Logf("source: %d bytes", len(src))
	var all []thumb.Spec
	for _, size := range []string{"100x100", "300x300", "600x0", "1200x0"} {
		spec, _ := thumb.Parse(size)
		all = append(all, spec)
		b.Run(size, func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				if _, _, err := thumb.Make(bytes.NewReader(src), spec, 50_000_000); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		start := cpuTime()
		for b.Loop() {
			if _, err := thumb.MakeAll(bytes.NewReader(src), all, 50_000_000); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/op")
	})
}

// cpuTime is the CPU time this process has used (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
