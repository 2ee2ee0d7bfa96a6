package locations_test

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
	"github.com/agritrade/api/system/internal/locations"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
)

// BenchRowsEnv sets the gazetteer size of BenchmarkGazetteer: e.g.
// AGRITRADE_BENCH_GAZETTEER_ROWS=1000000 for the figures of the README. The
// default keeps `make bench` short.
const BenchRowsEnv = "AGRITRADE_BENCH_GAZETTEER_ROWS"

var (
	syllables = []string{"ash", "bar", "brad", "brook", "bury", "by", "caster", "combe", "dale", "den", "don", "field", "ford", "gate",
		"ham", "hurst", "ing", "kirk", "ley", "low", "mere", "minster", "moor", "ness", "over", "pool", "port", "ridge", "sea",
		"shaw", "stead", "stoke", "stow", "thorpe", "ton", "wick", "well", "wood", "worth", "yard"}
	// One name in four has a qualifier, as in English place names.
	qualifiers = []string{"", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "",
		"Upper ", "Lower ", "Great ", "Little ", "North ", "South ", "East ", "West ", "Nether ", "Long "}
	areas = []string{"AB", "BD", "CB", "DL", "EX", "GL", "HG", "KA", "LA", "ME", "NR", "OX", "PE", "RG", "SY", "TA", "WR", "YO"}
)

// benchName makes a plausible, often repeated, place name.
func benchName(r *rand.Rand) string {
	n := syllables[r.IntN(len(syllables))] + syllables[r.IntN(len(syllables))]
	if r.IntN(3) == 0 {
		n += syllables[r.IntN(len(syllables))]
	}
	return qualifiers[r.IntN(len(qualifiers))] + string(n[0]-'a'+'A') + n[1:]
}

// benchPopulation follows real gazetteers: nine places in ten are hamlets and
// villages, three in a hundred towns of 5000 people or more.
func benchPopulation(r *rand.Rand) int {
	switch x := r.Float64(); {
	case x < 0.90:
		return r.IntN(1000)
	case x < 0.97:
		return 1000 + r.IntN(4000)
	default:
		return int(5000 * math.Exp(r.Float64()*math.Log(60)))
	}
}

// writeBenchDumps writes GeoNames dumps of about rows rows in total: 80 %
// populated places, 20 % full postcodes, all over Great Britain and Ireland.
func writeBenchDumps(b *testing.B, dir string, rows int) (placesFile, postcodesFile string, names []string) {
	b.Helper()
	r := rand.New(rand.NewPCG(2026, 11))
	placesFile, postcodesFile = filepath.Join(dir, "places.txt"), filepath.Join(dir, "postcodes.txt")
	write := func(name string, n int, line func(i int) string) {
		f, err := os.Create(name)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		for i := 0; i < n; i++ {
			_, _ = w.WriteString(line(i))
			_ = w.WriteByte('\n')
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		_ = f.Close()
	}
	nPlaces := rows * 8 / 10
	write(placesFile, nPlaces, func(i int) string {
		name := benchName(r)
		if i%97 == 0 {
			names = append(names, name)
		}
		country, admin1 := "GB", "ENG"
		lat, lon := 50.0+r.Float64()*8.5, -5.7+r.Float64()*7.4
		if r.IntN(8) == 0 {
			country, admin1, lat, lon = "IE", "L", 51.5+r.Float64()*3.8, -10+r.Float64()*4
		}
		return placeLine(20000000+i, name, lat, lon, "P", "PPL", country, admin1, benchPopulation(r))
	})
	write(postcodesFile, rows-nPlaces, func(i int) string {
		// Distinct codes: area, district 1-99, then the inward code from i.
		area := areas[i%len(areas)]
		district := 1 + (i/len(areas))%99
		k := i / (len(areas) * 99)
		inward := fmt.Sprintf("%d%c%c", k%10, 'A'+byte(k/10%26), 'A'+byte(k/260%26))
		return postcodeLine("GB", fmt.Sprintf("%s%d %s", area, district, inward), benchName(r), "England", "ENG", 50.0+r.Float64()*8.5, -5.7+r.Float64()*7.4)
	})
	return placesFile, postcodesFile, names
}

// cpuTime is the CPU time spent so far by this process and, on PostgreSQL,
// by the server backends of the benchmark's database: the machine is shared,
// so wall-clock rates alone say little.
func cpuTime(b *testing.B, bdb *bun.DB) map[int]time.Duration {
	b.Helper()
	out := map[int]time.Duration{}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		out[0] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if !db.IsPostgres(bdb) {
		return out
	}
	var pids []int
	if err := bdb.NewRaw("SELECT pid FROM pg_stat_activity WHERE datname = current_database()").Scan(context.Background(), &pids); err != nil {
		b.Fatal(err)
	}
	for _, pid := range pids {
		// Fields 14 and 15 of /proc/PID/stat are user and system time in clock ticks (100 Hz).
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
		if len(fields) > 13 {
			u, _ := strconv.ParseInt(fields[11], 10, 64)
			sy, _ := strconv.ParseInt(fields[12], 10, 64)
			out[pid] = time.Duration(u+sy) * 10 * time.Millisecond
		}
	}
	return out
}

// cpuSince sums the CPU time spent between two cpuTime samples.
func cpuSince(before, after map[int]time.Duration) time.Duration {
	var d time.Duration
	for k, v := range after {
		d += v - before[k]
	}
	return d
}

// peakHeap samples the heap while an import runs, to show memory stays bounded.
func peakHeap(stop <-chan struct{}, out *atomic.Uint64) {
	var m runtime.MemStats
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		runtime.ReadMemStats(&m)
		if m.HeapInuse > out.Load() {
			out.Store(m.HeapInuse)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// BenchmarkGazetteer generates GeoNames dumps, imports them with the importer
// (reporting its rate and peak heap), then measures searches and reverse
// lookups per second through the real HTTP engine, on each dialect.
func BenchmarkGazetteer(b *testing.B) {
	rows := 20000
	if v := os.Getenv(BenchRowsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			b.Fatalf("%s=%q: want a number of rows of at least 1000", BenchRowsEnv, v)
		}
		rows = n
	}
	dir := b.TempDir()
	placesFile, postcodesFile, names := writeBenchDumps(b, dir, rows)
	for _, d := range []testkit.Dialect{testkit.SQLite, testkit.Postgres} {
		b.Run(string(d), func(b *testing.B) {
			bdb := testkit.DB(b, d)
			s := testkit.NewServer(b, bdb, func(p *app.Platform) []module.Module {
				return []module.Module{system.New(p.Deps(system.Name))}
			}, testkit.Options{NoValidate: true, Configure: func(c *config.Config) {
				c.RateLimit.PerMinute = 0
				c.Log.Level = "warn"
			}})
			svc, err := locations.New(locations.Deps{Config: s.Config, DB: bdb, Log: logrus.NewEntry(logrus.StandardLogger())})
			if err != nil {
				b.Fatal(err)
			}
			var imported int
			var took time.Duration
			cpuBefore := cpuTime(b, bdb)
			var peak atomic.Uint64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); peakHeap(stop, &peak) }()
			for _, file := range []string{placesFile, postcodesFile} {
				f, err := os.Open(file)
				if err != nil {
					b.Fatal(err)
				}
				st, err := svc.NewImporter().Import(context.Background(), f)
				_ = f.Close()
				if err != nil {
					b.Fatal(err)
				}
				imported += st.Imported
				took += st.Duration
			}
			close(stop)
			wg.Wait()
			cpu := cpuSince(cpuBefore, cpuTime(b, bdb))
			fmt.Printf("%s: imported %d rows in %s: %.0f rows/s (%.0f rows per CPU second), peak heap %.0f MiB\n", d, imported, took.Round(time.Millisecond),
				float64(imported)/took.Seconds(), float64(imported)/cpu.Seconds(), float64(peak.Load())/(1<<20))

			r := rand.New(rand.NewPCG(1, 2))
			typo := func(n string) string {
				rn := []rune(n)
				i := 1 + r.IntN(len(rn)-2)
				rn[i], rn[i+1] = rn[i+1], rn[i]
				return string(rn)
			}
			cases := []struct {
				name string
				path func() string
			}{
				{"search_prefix", func() string {
					n := names[r.IntN(len(names))]
					return "/system/v1/locations/search?query=" + url.QueryEscape(n[:min(len(n), 3+r.IntN(5))])
				}},
				{"search_typo", func() string {
					return "/system/v1/locations/search?query=" + url.QueryEscape(typo(names[r.IntN(len(names))]))
				}},
				{"search_postcode", func() string {
					return "/system/v1/locations/search?query=" + url.QueryEscape(fmt.Sprintf("%s%d", areas[r.IntN(len(areas))], 1+r.IntN(99)))
				}},
				{"reverse", func() string {
					return fmt.Sprintf("/system/v1/locations/coordinates?lat=%.5f&lon=%.5f", 50.0+r.Float64()*8.5, -5.7+r.Float64()*7.4)
				}},
			}
			for _, c := range cases {
				b.Run(c.name, func(b *testing.B) {
					paths := make([]string, 1024)
					for i := range paths {
						paths[i] = c.path()
					}
					b.ResetTimer()
					before := cpuTime(b, bdb)
					for i := 0; i < b.N; i++ {
						rec := httptest.NewRecorder()
						s.App.Engine.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, paths[i%len(paths)], nil))
						if rec.Code != http.StatusOK && rec.Code != http.StatusNotFound {
							b.Fatalf("%s: %d %s", paths[i%len(paths)], rec.Code, rec.Body)
						}
					}
					b.StopTimer()
					cpu := cpuSince(before, cpuTime(b, bdb))
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
					b.ReportMetric(float64(b.N)/cpu.Seconds(), "req/cpu-s")
				})
			}
		})
	}
}
