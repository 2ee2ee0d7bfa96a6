package listings_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agritrade/api/livestock/internal/categories"
	"github.com/agritrade/api/livestock/internal/listings"
	"github.com/agritrade/api/platform/testkit"
	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
)

// savedQuery generates a plausible saved search: mostly a kind around a point
// of Great Britain (10 to 100 km), some by breed or listing type, a few for
// closed listings (never matched).
func savedQuery(rng *rand.Rand) url.Values {
	q := url.Values{}
	kind := categories.Kinds[rng.IntN(len(categories.Kinds))]
	point := func() {
		q.Set("latitude", strconv.FormatFloat(50+rng.Float64()*8.6, 'f', 4, 64))
		q.Set("longitude", strconv.FormatFloat(-6+rng.Float64()*7.5, 'f', 4, 64))
		q.Set("distanceKm", strconv.Itoa(10+rng.IntN(91)))
	}
	switch r := rng.IntN(20); {
	case r < 12:
		q.Set("f:commodityType", string(kind))
		point()
	case r < 15:
		q.Set("f:commodityType", string(categories.Sheep))
		breeds := categories.Values(categories.Sheep, categories.GroupBreed)
		q.Set("f:commodityBreed", breeds[rng.IntN(len(breeds))])
	case r < 17:
		point()
	case r < 19:
		q.Set("f:status", listings.FilterActiveSelling)
		q.Set("f:commodityType", string(kind))
		point()
	default:
		q.Set("f:status", listings.StatusSold)
	}
	return q
}

// BenchmarkNewListingWithSavedSearches measures the cost that saved-search
// matching adds to creating an active listing, with
// AGRITRADE_BENCH_SAVED_SEARCHES (default 100,000) saved searches of 20,000
// users: each new listing is stored and matched in one transaction (as the
// create route does), and the same is timed without matching for the baseline.
func BenchmarkNewListingWithSavedSearches(b *testing.B) {
	n := 100_000
	if v := os.Getenv("AGRITRADE_BENCH_SAVED_SEARCHES"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	for _, d := range []testkit.Dialect{testkit.Postgres, testkit.SQLite} {
		b.Run(string(d), func(b *testing.B) {
			db := testkit.DB(b, d)
			newServer(b, db) // migrates
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(7, 8))
			owners, queries := make([]string, n), make([]url.Values, n)
			for i := range queries {
				owners[i], queries[i] = "saver-"+strconv.Itoa(rng.IntN(20000)), savedQuery(rng)
			}
			t0 := time.Now()
			if err := listings.SaveSearchesForBench(ctx, db, owners, queries, func() string { return uuid.Must(uuid.NewV7()).String() }); err != nil {
				b.Fatal(err)
			}
			var cells int
			_ = db.NewSelect().TableExpr("livestock_saved_search_cells").ColumnExpr("count(*)").Scan(ctx, &cells)
			fmt.Printf("%s: %d saved searches (%d index keys) stored in %s\n", d, n, cells, time.Since(t0).Round(time.Millisecond))
			if d == testkit.Postgres {
				_, _ = db.ExecContext(ctx, "ANALYZE")
			}
			svc := listings.NewService(listings.NewStore(db), nil, nil, logrus.NewEntry(logrus.New()))
			const samples = 300
			now := time.Now().UTC()
			measure := func(match bool) ([]time.Duration, int) {
				times, alerts := make([]time.Duration, 0, samples), 0
				for i := 0; i < samples; i++ {
					l := benchListing(rng, now)
					l.Status = listings.StatusActive
					if l.Location == nil {
						l.Location = &listings.Location{Coordinates: listings.Coordinates{Lat: 50 + rng.Float64()*8.6, Lon: -6 + rng.Float64()*7.5}}
					}
					start := time.Now()
					a, err := svc.CreateActive(ctx, l, match)
					if err != nil {
						b.Fatal(err)
					}
					times = append(times, time.Since(start))
					alerts += a
				}
				slices.Sort(times)
				return times, alerts
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				base, _ := measure(false)
				with, alerts := measure(true)
				pct := func(ts []time.Duration, q float64) time.Duration {
					return ts[int(math.Ceil(q*float64(len(ts))))-1].Round(10 * time.Microsecond)
				}
				mean := func(ts []time.Duration) time.Duration {
					var sum time.Duration
					for _, t := range ts {
						sum += t
					}
					return (sum / time.Duration(len(ts))).Round(10 * time.Microsecond)
				}
				fmt.Printf("%s, %d saved searches, %d new active listings each:\n", d, n, samples)
				fmt.Printf("  %-34s %9s %9s %9s\n", "create", "mean", "p50", "p99")
				fmt.Printf("  %-34s %9s %9s %9s\n", "without matching", mean(base), pct(base, 0.5), pct(base, 0.99))
				fmt.Printf("  %-34s %9s %9s %9s\n", "with matching (same transaction)", mean(with), pct(with, 0.5), pct(with, 0.99))
				fmt.Printf("  matching adds %s per new listing (mean); %.1f alerts per listing\n", (mean(with) - mean(base)).Round(10*time.Microsecond), float64(alerts)/samples)
				b.ReportMetric(float64(mean(with)-mean(base))/1e6, "ms-matching/listing")
				b.ReportMetric(float64(pct(with, 0.99))/1e6, "ms-p99-create/listing")
			}
		})
	}
}
