package gazetteer

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system/internal/locations/place"
	"github.com/uptrace/bun"
)

func TestSeedData(t *testing.T) {
	set, err := loadSeed()
	if err != nil {
		t.Fatal(err)
	}
	if len(set.places) < 300 {
		t.Fatalf("%d seeded places, want at least 300", len(set.places))
	}
	countries := map[string]int{}
	words := 0
	for _, p := range set.places {
		countries[p.CountryISO]++
		// Great Britain, Northern Ireland, Ireland and the islands around them.
		if p.Lat < 49.8 || p.Lat > 61 || p.Lon < -10.7 || p.Lon > 1.8 {
			t.Errorf("%s at %v,%v lies outside the British Isles", p.Name, p.Lat, p.Lon)
		}
		if !strings.HasPrefix(p.RegionISO, p.CountryISO+"-") || p.RegionName == "" || p.CountryName == "" {
			t.Errorf("%s: region %s %q in %s", p.Name, p.RegionISO, p.RegionName, p.CountryISO)
		}
		if p.ThreeWords != nil {
			words++
		}
	}
	if countries["GB"] < 200 || countries["IE"] < 80 {
		t.Fatalf("places per country %v", countries)
	}
	districts, full := 0, 0
	for _, pc := range set.postcodes {
		if pc.IsDistrict {
			districts++
		} else {
			full++
		}
		// A postcode lies near its post town.
		for _, p := range set.places {
			if p.NameNorm == pc.PlaceNorm && p.RegionISO == pc.RegionISO && place.DistanceKm(place.Coordinates{Lat: p.Lat, Lon: p.Lon}, place.Coordinates{Lat: pc.Lat, Lon: pc.Lon}) > 30 {
				t.Errorf("%s lies over 30 km from %s", pc.Code, p.Name)
			}
		}
	}
	if districts < 250 || full < 5 || words < 5 {
		t.Fatalf("%d districts, %d full postcodes, %d three-word addresses", districts, full, words)
	}
}

func TestSeedIsIdempotent(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		// The module's own migration files (the module root embeds the same).
		sets, err := db.SQLMigrations(os.DirFS("../../../migrations"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.MigrateUp(context.Background(), bdb, "system", sets); err != nil {
			t.Fatal(err)
		}
		store := NewStore(bdb)
		ctx := context.Background()
		counts := func() (int, int, int) {
			pl, pc, err := store.Counts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			kendal, _, _ := store.Place(ctx, "seed:gb-cma:kendal")
			return pl, pc, kendal.Postcodes
		}
		if err := Seed(ctx, store); err != nil {
			t.Fatal(err)
		}
		pl, pc, k := counts()
		if pl < 300 || pc < 250 || k != 2 {
			t.Fatalf("after seeding: %d places, %d postcodes, Kendal holds %d", pl, pc, k)
		}
		// Starting again does nothing; a changed seed is loaded again without duplicates.
		if err := Seed(ctx, store); err != nil {
			t.Fatal(err)
		}
		if err := store.SetMeta(ctx, bdb, seedHashKey, "older"); err != nil {
			t.Fatal(err)
		}
		if err := Seed(ctx, store); err != nil {
			t.Fatal(err)
		}
		if pl2, pc2, k2 := counts(); pl2 != pl || pc2 != pc || k2 != k {
			t.Fatalf("re-seeding changed the counts: %d/%d/%d then %d/%d/%d", pl, pc, k, pl2, pc2, k2)
		}
		if h, _ := store.Meta(ctx, bdb, seedHashKey); h == "older" || h == "" {
			t.Fatalf("seed hash %q not updated", h)
		}
	})
}
