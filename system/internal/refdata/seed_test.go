package refdata_test

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

func count(t *testing.T, db *bun.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSeed(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		s, mod := newServer(t, db)
		tables := []string{"refdata_countries", "refdata_regions", "refdata_commodity_items", "refdata_commodity_grades", "refdata_varieties", "refdata_grade_measures", "refdata_reasons"}
		counts := map[string]int{}
		for _, tb := range tables {
			counts[tb] = count(t, db, tb)
		}
		if counts["refdata_countries"] != 11 || counts["refdata_regions"] != 243 || counts["refdata_commodity_items"] != 16 {
			t.Fatalf("seeded %v", counts)
		}

		// Same version: the seed does nothing (a row removed by hand stays removed).
		execSQL(t, db, "DELETE FROM refdata_countries WHERE iso = ?", "NZ")
		start := time.Now()
		if err := mod.Seed(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("seed with the data already in place: %v", time.Since(start))
		if n := count(t, db, "refdata_countries"); n != 10 {
			t.Fatalf("the seed ran again over the same version: %d countries", n)
		}

		// An admin import, then a new data version: the data is rewritten, the
		// imported list survives, the cache is dropped.
		res := importResult(t, s.Do(upload(t, s.Token(testkit.Admin), "v.csv", []byte("commodityId,type,grade,variety\n1,Milling,Group 1,Imported One\n"))))
		if res.Success != 1 {
			t.Fatalf("%+v", res)
		}
		_ = s.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/countries"}) // cache the list without NZ
		execSQL(t, db, "UPDATE refdata_parameters SET value = ? WHERE key = ?", "an older version", "data_version")
		execSQL(t, db, "DELETE FROM refdata_varieties WHERE grade_id = ?", millingGroup2)
		start = time.Now()
		if err := mod.Seed(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("seed of a new data version: %v", time.Since(start))
		for _, tb := range tables {
			if n := count(t, db, tb); n != counts[tb] && tb != "refdata_varieties" {
				t.Errorf("%s has %d rows after the reseed, want %d", tb, n, counts[tb])
			}
		}
		if got := varieties(t, s, wheat, millingGroup1); !reflect.DeepEqual(got, []string{"Imported One"}) {
			t.Fatalf("the reseed lost the imported list: %v", got)
		}
		if got := varieties(t, s, wheat, millingGroup2); !reflect.DeepEqual(got, []string{"KWS Extase", "KWS Siskin", "KWS Lili"}) {
			t.Fatalf("the reseed did not restore the seeded list: %v", got)
		}
		if got := countryName(t, s, "NZ"); got != "New Zealand" {
			t.Fatalf("the cached country list survived the reseed: NZ is %q", got)
		}
	})
}

// TestSeedConcurrent: replicas starting together over one database seed once
// and fail nothing.
func TestSeedConcurrent(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		_, mod := newServer(t, db)
		execSQL(t, db, "UPDATE refdata_parameters SET value = ? WHERE key = ?", "stale", "data_version")
		errs := make(chan error, 4)
		for i := 0; i < 4; i++ {
			go func() { errs <- mod.Seed(context.Background()) }()
		}
		for i := 0; i < 4; i++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if n := count(t, db, "refdata_regions"); n != 243 {
			t.Fatalf("%d regions", n)
		}
	})
}
