package listings_test

import (
	"context"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agritrade/api/livestock/internal/listings"
	"github.com/agritrade/api/platform/logging"
	"github.com/agritrade/api/platform/testkit"
	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// TestSavedSearchCandidatesReadTheIndex: with 20,000 analysed saved searches,
// the statement that finds a new listing's candidate searches reads the
// (kind, type, breed, cell) index and the searches by key: it never scans
// every search.
func TestSavedSearchCandidatesReadTheIndex(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		newServer(t, db)                                                      // migrates
		ctx := logging.WithRequestID(context.Background(), "saved-plan-test") // recorded as a request's statements
		rng := rand.New(rand.NewPCG(7, 8))
		n := 20000
		owners, queries := make([]string, n), make([]url.Values, n)
		for i := range queries {
			owners[i], queries[i] = "saver-"+strconv.Itoa(rng.IntN(2000)), savedQuery(rng)
		}
		if err := listings.SaveSearchesForBench(ctx, db, owners, queries, func() string { return uuid.Must(uuid.NewV7()).String() }); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "ANALYZE"); err != nil {
			t.Fatal(err)
		}
		svc := listings.NewService(listings.NewStore(db), nil, nil, logrus.NewEntry(logrus.New()))
		rec := testkit.RecordQueries(db)
		l := benchListing(rng, time.Now().UTC())
		l.Status, l.Kind = listings.StatusActive, "sheep"
		l.Location = &listings.Location{Coordinates: listings.Coordinates{Lat: 53, Lon: -2}}
		var p listings.MatchPhases
		stmts := rec.Record(func() {
			var err error
			if p, err = svc.CreateAndMatch(ctx, l); err != nil {
				t.Fatal(err)
			}
		})
		if p.Candidates == 0 || p.Candidates > n/10 {
			t.Fatalf("%d candidates of %d searches", p.Candidates, n)
		}
		cells, searches := "livestock_saved_search_cells_v2_pkey", "livestock_saved_searches_pkey"
		if db.Dialect().Name() != dialect.PG {
			cells, searches = "sqlite_autoindex_livestock_saved_search_cells_1", "sqlite_autoindex_livestock_saved_searches_1"
		}
		found := false
		for _, q := range stmts {
			if !strings.Contains(q, "livestock_saved_search_cells") {
				continue
			}
			found = true
			testkit.AssertIndexed(t, db, q, testkit.Reads{Table: "livestock_saved_search_cells", Aliases: []string{"c"}, Want: []string{cells}})
			testkit.AssertIndexed(t, db, q, testkit.Reads{Table: "livestock_saved_searches", Aliases: []string{"s"}, Want: []string{searches}})
		}
		if !found {
			t.Fatalf("no candidate statement among %q", stmts)
		}
	})
}
