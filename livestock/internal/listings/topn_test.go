package listings_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/agritrade/api/livestock/internal/listings"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/testkit"
)

// TestSearchNear_200_TheGoPageIsTheSQLPage: on SQLite a search around a point
// chooses its page in Go (topn.go); the single statement that chooses it in
// SQL (searchPage, itself checked against the brute force) is the reference.
// Over 600 listings around York whose dates, prices and places repeat, so
// that the ids break many ties, every order, direction, page and filter
// answers the same ids, in the same order, the same distances and the same
// number of matches both ways.
func TestSearchNear_200_TheGoPageIsTheSQLPage(t *testing.T) {
	db := testkit.DB(t, testkit.SQLite)
	newServer(t, db) // migrates
	store := listings.NewStore(db)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(11, 12))
	base := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	spots := [][2]float64{{53.96, -1.08}, {54.1, -1.5}, {53.8, -0.7}}
	var ls []*listings.Listing
	for i := 0; i < 600; i++ {
		l := benchListing(rng, base)
		l.CreatedAt = base.Add(time.Duration(rng.IntN(40)) * time.Hour) // 40 dates: ties
		l.UpdatedAt = base.Add(time.Duration(rng.IntN(30)) * time.Minute)
		l.Price.PricePerUnit.Amount = float64(50 + rng.IntN(25))
		lat, lon := 53.96+(rng.Float64()-0.5)*1.2, -1.08+(rng.Float64()-0.5)*2
		if i%10 == 0 { // same places: ties of distance
			s := spots[rng.IntN(len(spots))]
			lat, lon = s[0], s[1]
		}
		l.Location = &listings.Location{Coordinates: listings.Coordinates{Lat: lat, Lon: lon}}
		ls = append(ls, l)
	}
	if err := store.BulkInsert(ctx, ls); err != nil {
		t.Fatal(err)
	}
	viewer := listings.Viewer{UserID: "user-7", Orgs: []string{"org-1"}}
	filters := map[string]listings.Filter{
		"active-selling sheep": {Status: listings.FilterActiveSelling, Kind: "sheep"},
		"any active":           {},
	}
	pages := [][2]int{{0, 20}, {20, 20}, {7, 13}, {0, 100}, {150, 100}, {590, 20}, {0, 1}}
	matched := 0
	for name, f := range filters {
		for _, sortBy := range listings.SortFields {
			for _, desc := range []bool{true, false} {
				for _, pg := range pages {
					f := f
					f.Near = &listings.Point{Lat: 53.96, Lon: -1.08, Km: 50}
					sr := listings.Search{Filter: f, Page: httpx.Page{Offset: pg[0], Limit: pg[1], SortBy: sortBy, SortDesc: desc}, Docs: true}
					t.Run(fmt.Sprintf("%s/%s/desc=%v/offset=%d/limit=%d", name, sortBy, desc, pg[0], pg[1]), func(t *testing.T) {
						got, total, err := store.Search(ctx, viewer, sr)
						if err != nil {
							t.Fatal(err)
						}
						restore := listings.SetTopNMax(0)
						want, wantTotal, err := store.Search(ctx, viewer, sr)
						restore()
						if err != nil {
							t.Fatal(err)
						}
						if total != wantTotal || !slices.Equal(listingIDs(got), listingIDs(want)) {
							t.Fatalf("Go page: %d matches %v\nSQL page: %d matches %v", total, listingIDs(got), wantTotal, listingIDs(want))
						}
						for i := range got {
							if *got[i].DistanceKm != *want[i].DistanceKm {
								t.Fatalf("distance of %s: %v, SQL page %v", got[i].ID, *got[i].DistanceKm, *want[i].DistanceKm)
							}
						}
						matched = max(matched, total)
					})
				}
			}
		}
	}
	if matched < 150 {
		t.Fatalf("at most %d matches: too few for the pages to cut through ties", matched)
	}
}

func listingIDs(ls []*listings.Listing) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.ID
	}
	return out
}
