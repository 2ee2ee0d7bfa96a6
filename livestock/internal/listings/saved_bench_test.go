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
// matching adds to a new active listing, with AGRITRADE_BENCH_SAVED_SEARCHES
// (default 100,000) saved searches of 20,000 users, phase by phase as the
// alerts runner pays it: the candidate query (the kind/type/breed/cell index),
// the filter (each candidate's own WHERE on the listing, 100 per statement),
// and writing the alerts with their notifications and stream events (one
// transaction). Matching is the first two; writing grows with the alerts, so
// it is also given per alert. Creating without matching is the baseline.
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
			_, _ = db.ExecContext(ctx, "ANALYZE")
			svc := listings.NewService(listings.NewStore(db), nil, nil, logrus.NewEntry(logrus.New()))
			const samples = 300
			now := time.Now().UTC()
			newListing := func() *listings.Listing {
				l := benchListing(rng, now)
				l.Status = listings.StatusActive
				if l.Location == nil {
					l.Location = &listings.Location{Coordinates: listings.Coordinates{Lat: 50 + rng.Float64()*8.6, Lon: -6 + rng.Float64()*7.5}}
				}
				return l
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				base := make([]time.Duration, 0, samples)
				for j := 0; j < samples; j++ {
					start := time.Now()
					if _, err := svc.CreateActive(ctx, newListing(), false); err != nil {
						b.Fatal(err)
					}
					base = append(base, time.Since(start))
				}
				var cand, filter, match, write []time.Duration
				var cands, matched, alerts int
				var writeSum time.Duration
				for j := 0; j < samples; j++ {
					p, err := svc.CreateAndMatch(ctx, newListing())
					if err != nil {
						b.Fatal(err)
					}
					cand, filter, match, write = append(cand, p.Candidate), append(filter, p.Filter), append(match, p.Candidate+p.Filter), append(write, p.Write)
					cands, matched, alerts, writeSum = cands+p.Candidates, matched+p.Matched, alerts+p.Alerts, writeSum+p.Write
				}
				fmt.Printf("%s, %d saved searches, %d new active listings each:\n", d, n, samples)
				fmt.Printf("  %-52s %9s %9s %9s\n", "per new listing", "mean", "p50", "p99")
				for _, r := range []struct {
					name string
					ts   []time.Duration
				}{
					{"create without matching (baseline)", base},
					{"matching: candidate query (kind/type/breed/cell)", cand},
					{"matching: filter (own WHERE, 100 per statement)", filter},
					{"matching: candidates + filter", match},
					{"writing the alerts (+ outbox, events; one tx)", write},
				} {
					fmt.Printf("  %-52s %9s %9s %9s\n", r.name, mean(r.ts), pct(r.ts, 0.5), pct(r.ts, 0.99))
				}
				perAlert := time.Duration(0)
				if alerts > 0 {
					perAlert = (writeSum / time.Duration(alerts)).Round(time.Microsecond)
				}
				fmt.Printf("  %.1f candidates from the index of %d searches, %.1f matched, %.1f alerts per listing; writing costs %s per alert\n",
					float64(cands)/samples, n, float64(matched)/samples, float64(alerts)/samples, perAlert)
				b.ReportMetric(float64(mean(match))/1e6, "ms-matching/listing")
				b.ReportMetric(float64(perAlert)/1e6, "ms-write/alert")
				b.ReportMetric(float64(cands)/samples, "candidates/listing")
			}
		})
	}
}

// pct answers the q quantile of ts (sorted here).
func pct(ts []time.Duration, q float64) time.Duration {
	ts = slices.Clone(ts)
	slices.Sort(ts)
	return ts[int(math.Ceil(q*float64(len(ts))))-1].Round(10 * time.Microsecond)
}

func mean(ts []time.Duration) time.Duration {
	var sum time.Duration
	for _, t := range ts {
		sum += t
	}
	return (sum / time.Duration(len(ts))).Round(10 * time.Microsecond)
}
