package listings_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agritrade/api/livestock/internal/listings"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

type fillWish struct {
	bun.BaseModel `bun:"table:livestock_wishlist"`

	UserID    string    `bun:"user_id,pk"`
	ListingID string    `bun:"listing_id,pk"`
	CreatedAt time.Time `bun:"created_at"`
}

// fillListings writes n listings as the search benchmark generates them (5,000
// organisations, the farmer's with a share of 1%), changes spread over 30 days,
// a quarter of them wishlisted, and refreshes the planner's statistics.
func fillListings(t *testing.T, db *bun.DB, n int) {
	t.Helper()
	ctx := context.Background()
	store := listings.NewStore(db)
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	now := time.Now().UTC()
	var wished []fillWish
	for done := 0; done < n; {
		chunk := make([]*listings.Listing, 0, 2000)
		for ; done < n && len(chunk) < cap(chunk); done++ {
			l := benchListing(rng, now)
			if done%100 == 17 {
				l.OrganisationID, l.OrganisationName = farmer.OrgID, farmer.OrgName
			}
			l.UpdatedAt = now.Add(-time.Duration(rng.Int64N(int64(30 * 24 * time.Hour)))).Truncate(time.Microsecond)
			chunk = append(chunk, l)
			if done%4 == 0 { // a quarter of the listings on someone's wishlist
				wished = append(wished, fillWish{UserID: fmt.Sprintf("user-%d", rng.IntN(2000)), ListingID: l.ID, CreatedAt: now})
			}
		}
		if err := store.BulkInsert(ctx, chunk); err != nil {
			t.Fatal(err)
		}
		if _, err := db.NewInsert().Model(&wished).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		wished = wished[:0]
	}
	if err := store.RefreshStatistics(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestUpdatedSinceReadsSinceIndexes: over 20,000 analysed listings, the
// statement of a catch-up, as the store issues it, finds the changes by a
// range of the active listings' (status, updated_at) index and one of the
// caller's organisations' (organisation_id, updated_at) index, and reads the
// page's rows by key: no scan of the table, nor of a whole index.
func TestUpdatedSinceReadsSinceIndexes(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		fillListings(t, db, 20000)
		rec := testkit.RecordQueries(db)
		pkey, wish := "livestock_listings_pkey", "livestock_wishlist_pkey"
		if db.Dialect().Name() != dialect.PG {
			pkey, wish = "sqlite_autoindex_livestock_listings_1", "sqlite_autoindex_livestock_wishlist_1"
		}
		cutoff := time.Now().UTC().Add(-24 * time.Hour).Format(time.RFC3339)
		for name, q := range map[string]url.Values{
			"first page":   {"updatedSinceUTC": {cutoff}},
			"page 2":       {"updatedSinceUTC": {cutoff}, "offset": {"20"}},
			"newest first": {"updatedSinceUTC": {cutoff}, "sortDesc": {"true"}},
			"sheep":        {"updatedSinceUTC": {cutoff}, "f:commodityType": {"sheep"}},
		} {
			for who, p := range map[string]auth.Principal{"farmer": farmer, "outsider": outsider} {
				t.Run(name+"/"+who, func(t *testing.T) {
					var total int
					queries := rec.Record(func() { _, total = search(t, s, p, q) })
					if total == 0 {
						t.Fatal("the catch-up found nothing: the plan would not show the page's reads")
					}
					if len(queries) == 0 {
						t.Fatal("no statement recorded")
					}
					for _, stmt := range queries {
						if !strings.Contains(stmt, `"livestock_listings"`) {
							t.Fatalf("unexpected statement: %s", stmt)
						}
						testkit.AssertIndexed(t, db, stmt, testkit.Reads{Table: "livestock_listings", Aliases: []string{"l"},
							Want: []string{"livestock_listings_since", "livestock_listings_org_since"}, Also: []string{pkey}})
						testkit.AssertIndexed(t, db, stmt, testkit.Reads{Table: "livestock_wishlist", Aliases: []string{"w"}, Also: []string{wish}})
					}
				})
			}
		}
	})
}

// TestFilterSearchesReadPartialIndexes_200: the breed society and age indexes
// hold only listings with a value (migration 0010, so that a listing without
// one writes no page of them); a search filtering on the society still
// searches its index on both databases, and one on a minimum age its index on
// SQLite (PostgreSQL's planner prefers the recent index there, with or
// without the partial index). Fails if a filter's condition stops implying
// the index's IS NOT NULL.
func TestFilterSearchesReadPartialIndexes_200(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		fillListings(t, db, 20000)
		rec := testkit.RecordQueries(db)
		pg := db.Dialect().Name() == dialect.PG
		cases := map[string]string{
			"f:commodityBreedSociety=NSA":      "livestock_listings_society",
			"f:commodityBreedSociety=NSA,ISDS": "livestock_listings_society",
		}
		if !pg {
			cases["minAge=12"] = "livestock_listings_age"
		}
		for raw, index := range cases {
			t.Run(raw, func(t *testing.T) {
				q, err := url.ParseQuery(raw)
				if err != nil {
					t.Fatal(err)
				}
				queries := rec.Record(func() { search(t, s, farmer, q) })
				if len(queries) == 0 {
					t.Fatal("no statement recorded")
				}
				found := false
				for _, stmt := range queries {
					if strings.Contains(strings.Join(testkit.Plan(t, db, stmt), "\n"), index) {
						found = true
					}
				}
				if !found {
					t.Fatalf("no statement of %s reads %s", raw, index)
				}
			})
		}
	})
}

// TestNearSearchesWithoutKindSeekTheGeoIndex_200: over 20,000 analysed
// listings, a search around a point that filters on no kind (nor, for the
// first, on a type) seeks the geo index on SQLite by kind and type (the store
// spells them out as lists; migration 0011 dropped the geo index without kind
// there) and never scans the table nor a whole index (the statements' plans
// as prepared, their values parameters; the page's rows are then read by
// id). PostgreSQL keeps its geo index without kind and reads no other way. Fails if the lists stop being
// written.
func TestNearSearchesWithoutKindSeekTheGeoIndex_200(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		fillListings(t, db, 20000)
		rec := testkit.RecordQueries(db)
		pg := db.Dialect().Name() == dialect.PG
		for name, status := range map[string]string{"active": "", "active-selling": "active-selling"} {
			t.Run(name, func(t *testing.T) {
				q := url.Values{"latitude": {"52.5"}, "longitude": {"-1.5"}, "distanceKm": {"60"}}
				if status != "" {
					q.Set("f:status", status)
				}
				var total int
				queries := rec.Record(func() { _, total = search(t, s, farmer, q) })
				if total == 0 {
					t.Fatal("the search found nothing: the plan would not show the page's reads")
				}
				read, sought := false, false
				for _, stmt := range queries {
					if !strings.Contains(stmt, `"livestock_listings"`) {
						continue
					}
					read = true
					if pg {
						testkit.AssertIndexed(t, db, stmt, testkit.Reads{Table: "livestock_listings", Aliases: []string{"l"},
							Want: []string{"livestock_listings_status_geo"}, Also: []string{"livestock_listings_geo", "livestock_listings_pkey"}})
						continue
					}
					// The matches' statement seeks the geo index; the page's
					// (topn.go) reads its rows by id.
					plan := strings.Join(testkit.Plan(t, db, stmt), "\n")
					switch {
					case strings.Contains(plan, "SCAN l"):
						t.Fatalf("a statement scans the listings:\n%s", plan)
					case strings.Contains(plan, "USING COVERING INDEX livestock_listings_geo (status=? AND kind=? AND type=? AND hidden=?"):
						sought = true
					case !strings.Contains(plan, "SEARCH l USING INDEX sqlite_autoindex_livestock_listings_1 (id=?)"):
						t.Fatalf("a statement reads the listings neither by the geo index nor by id:\n%s", plan)
					}
				}
				if !read || !pg && !sought {
					t.Fatalf("no statement read the listings (%v) or sought the geo index by kind and type (%v)", read, sought)
				}
			})
		}
	})
}
