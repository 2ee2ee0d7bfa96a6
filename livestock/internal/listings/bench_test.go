package listings_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agritrade/api/livestock/internal/categories"
	"github.com/agritrade/api/livestock/internal/listings"
	"github.com/agritrade/api/platform/testkit"
	"github.com/google/uuid"
)

// benchSize reads the number of listings to generate for a dialect from
// AGRITRADE_BENCH_<DIALECT>_LISTINGS (the figures are for 1000000 on
// PostgreSQL and 100000 on SQLite; bench/livestock_search.sh sets them), with a
// small default so that `make bench` stays quick.
func benchSize(b *testing.B, d testkit.Dialect) int {
	name := "AGRITRADE_BENCH_" + map[testkit.Dialect]string{testkit.SQLite: "SQLITE", testkit.Postgres: "PG"}[d] + "_LISTINGS"
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive integer", name, v)
		}
		return n
	}
	return 20000
}

// benchListing generates a plausible listing: kinds alike, 80% active, spread
// over Great Britain and Ireland, created over the last year.
func benchListing(rng *rand.Rand, now time.Time) *listings.Listing {
	kind := categories.Kinds[rng.IntN(len(categories.Kinds))]
	created := now.Add(-time.Duration(rng.Int64N(int64(365 * 24 * time.Hour)))).Truncate(time.Microsecond)
	l := &listings.Listing{
		ID: uuid.Must(uuid.NewV7()).String(), UserID: fmt.Sprintf("user-%d", rng.IntN(20000)),
		Kind: kind, Type: []string{listings.Selling, listings.Buying}[rng.IntN(2)], Status: listings.StatusActive,
		CategoryIDs: []int{slices.Index(categories.Kinds, kind) + 1}, Description: "Generated listing", Tags: []string{"bench"},
		Price:     listings.Price{Type: "fixed", PricePerUnit: listings.Money{Amount: float64(rng.IntN(300000)) / 100, Currency: "GBP"}},
		CreatedAt: created, UpdatedAt: created,
	}
	l.OrganisationID = "org-" + strconv.Itoa(rng.IntN(5000))
	l.OrganisationName = "Farm " + l.OrganisationID
	switch r := rng.IntN(20); {
	case r == 0:
		l.Status = listings.StatusDraft
	case r == 1:
		l.Status = listings.StatusCancelled
	case r < 4:
		l.Status = map[string]string{listings.Selling: listings.StatusSold, listings.Buying: listings.StatusFound}[l.Type]
	}
	if rng.IntN(10) > 0 {
		l.Location = &listings.Location{Coordinates: listings.Coordinates{Lat: 50 + rng.Float64()*8.6, Lon: -10.5 + rng.Float64()*12.2}}
	}
	breeds := categories.Values(kind, categories.GroupBreed)
	info := func() []string {
		var out []string
		for _, v := range listings.AddInfo {
			if rng.IntN(5) == 0 {
				out = append(out, v)
			}
		}
		return out
	}
	switch kind {
	case categories.Sheep:
		l.Properties = &listings.SheepProperties{BreedType: breeds[rng.IntN(len(breeds))], Type: []string{"store"}, AdditionalInfo: info(), Sexes: listings.Sexes[rng.IntN(4)]}
	case categories.Cattle:
		lo, hi := float64(rng.IntN(30)), float64(30+rng.IntN(30))
		l.Properties = &listings.CattleProperties{BreedType: breeds[rng.IntN(len(breeds))], AdditionalInfo: info(), Sexes: listings.Sexes[4+rng.IntN(4)], MinAge: &lo, MaxAge: &hi}
	case categories.WorkingDog:
		l.Properties = &listings.DogProperties{BreedType: breeds[rng.IntN(len(breeds))], Sex: listings.DogSexes[rng.IntN(2)]}
	}
	return l
}

// BenchmarkSearchSheepNear measures the issue's query, "sheep, active-selling,
// within 50 km of a point, newest first, 20 per page", through the real HTTP
// engine (auth, query parsing, count and page, JSON) over a bulk-generated
// marketplace, from parallel clients at random points of Great Britain. It
// reports p50 and p99 latency and requests per second.
func BenchmarkSearchSheepNear(b *testing.B) {
	for _, d := range []testkit.Dialect{testkit.SQLite, testkit.Postgres} {
		if d == testkit.Postgres {
			if dsn, reason := testkit.PostgresAdminDSN(b); dsn == "" {
				b.Log(reason)
				continue
			}
		}
		n := benchSize(b, d)
		db := testkit.DB(b, d)
		s := newServer(b, db)
		store := listings.NewStore(db)
		ctx := context.Background()
		start := time.Now()
		rng := rand.New(rand.NewPCG(42, uint64(n)))
		now := time.Now().UTC()
		for done := 0; done < n; {
			chunk := make([]*listings.Listing, 0, 10000)
			for ; done < n && len(chunk) < cap(chunk); done++ {
				chunk = append(chunk, benchListing(rng, now))
			}
			if err := store.BulkInsert(ctx, chunk); err != nil {
				b.Fatal(err)
			}
		}
		if err := store.RefreshStatistics(ctx); err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: generated %d listings in %s", d, n, time.Since(start).Round(time.Second))
		token := s.Token(outsider)
		b.Run(fmt.Sprintf("%s/%d", d, n), func(b *testing.B) {
			var (
				mu        sync.Mutex
				latencies []time.Duration
				matches   int
			)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
				var local []time.Duration
				seen := 0
				for pb.Next() {
					lat, lon := 50.5+rng.Float64()*5, -4.5+rng.Float64()*5
					path := fmt.Sprintf("/livestock/v1/listings?f:commodityType=sheep&f:status=active-selling&latitude=%.4f&longitude=%.4f&distanceKm=50&sortBy=createdAtUTC&sortDesc=true&limit=20", lat, lon)
					req := httptest.NewRequest(http.MethodGet, path, nil)
					req.Header.Set("Authorization", "Bearer "+token)
					rec := httptest.NewRecorder()
					t0 := time.Now()
					s.App.Engine.ServeHTTP(rec, req)
					local = append(local, time.Since(t0))
					if rec.Code != http.StatusOK {
						b.Errorf("%s: %d %s", path, rec.Code, rec.Body)
						return
					}
					if c, err := strconv.Atoi(rec.Header().Get("X-Total-Count")); err == nil {
						seen += c
					}
				}
				mu.Lock()
				latencies = append(latencies, local...)
				matches += seen
				mu.Unlock()
			})
			elapsed := b.Elapsed()
			b.StopTimer()
			if len(latencies) == 0 {
				return
			}
			slices.Sort(latencies)
			pct := func(p float64) float64 {
				return float64(latencies[min(len(latencies)-1, int(p*float64(len(latencies))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "req/s")
			b.ReportMetric(float64(matches)/float64(len(latencies)), "matches/query")
		})
	}
}
