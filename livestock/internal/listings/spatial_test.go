package listings_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// TestNearSearchFollowsTheListing checks that the distance search's index
// (the longitude band ahead of the latitude, migration 0007) follows every
// write of a listing: found at its place, at its new place once moved (into
// another longitude band, and across the antimeridian), nowhere once its
// location is removed, and never once closed.
func TestNearSearchFollowsTheListing(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		own := s.Token(farmer)
		id := create(t, s, farmer, "sheep", with(validBody("sheep"), "location", location("Kendal", "LA9 4AA", 54.33, -2.75)))
		near := func(lat, lon float64) url.Values {
			return url.Values{"f:commodityType": {"sheep"}, "f:status": {"active-selling"}, "latitude": {fmt.Sprint(lat)},
				"longitude": {fmt.Sprint(lon)}, "distanceKm": {"20"}, "sortBy": {"createdAtUTC"}, "sortDesc": {"true"}}
		}
		found := func(t *testing.T, q url.Values) bool {
			t.Helper()
			got, total := search(t, s, outsider, q)
			if total != len(got) {
				t.Fatalf("X-Total-Count %d for a page of %d", total, len(got))
			}
			return slices.Contains(ids(got), id)
		}
		move := func(t *testing.T, loc any) {
			t.Helper()
			r := s.Do(testkit.Request{Method: http.MethodPatch, Path: "/livestock/v1/listings/" + id, Token: own, JSON: map[string]any{"location": loc}})
			if r.Status != http.StatusOK {
				t.Fatalf("move: %d %s", r.Status, r.Body)
			}
		}
		kendal, york, fiji, samoa := near(54.33, -2.75), near(53.96, -1.08), near(-17.8, 179.99), near(-17.8, -179.99)
		t.Run("200_found_at_its_place", func(t *testing.T) {
			if !found(t, kendal) || found(t, york) {
				t.Fatal("want it near Kendal only")
			}
		})
		t.Run("200_moved_found_at_the_new_place_only", func(t *testing.T) {
			move(t, location("York", "YO1 7HH", 53.96, -1.08))
			if found(t, kendal) || !found(t, york) {
				t.Fatal("want it near York only")
			}
		})
		t.Run("200_moved_across_the_antimeridian", func(t *testing.T) {
			// Just east of 180°: a search centred just west of it must still
			// find it, its box wrapping to the other side.
			move(t, location("Taveuni", "", -17.8, -179.995))
			if found(t, york) || !found(t, fiji) || !found(t, samoa) {
				t.Fatal("want it on both sides of the antimeridian only")
			}
		})
		t.Run("200_location_removed_found_nowhere", func(t *testing.T) {
			move(t, nil)
			if found(t, fiji) || found(t, near(0, 0)) {
				t.Fatal("a listing without location found near a point")
			}
			move(t, location("Kendal", "LA9 4AA", 54.33, -2.75))
			if !found(t, kendal) {
				t.Fatal("located again, not found")
			}
		})
		t.Run("200_closed_never_found", func(t *testing.T) {
			r := s.Do(testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/listings/" + id + "/close", Token: own, JSON: map[string]any{"status": "sold"}})
			if r.Status != http.StatusOK {
				t.Fatalf("close: %d %s", r.Status, r.Body)
			}
			if found(t, kendal) {
				t.Fatal("a sold listing found by an active-selling search")
			}
			var status string
			if err := db.NewSelect().Table("livestock_listings").Column("status").Where("id = ?", id).Scan(t.Context(), &status); err != nil || status != "sold" {
				t.Fatalf("stored status %q, %v", status, err)
			}
		})
	})
}
