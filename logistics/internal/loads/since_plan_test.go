package loads_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	lt "github.com/agritrade/api/logistics/internal/logisticstest"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// fillLoad is the least a generated load needs (every NOT NULL column).
type fillLoad struct {
	bun.BaseModel `bun:"table:logistics_loads"`

	ID               string    `bun:"id,pk"`
	Reference        string    `bun:"reference"`
	OrganiserID      string    `bun:"organiser_id"`
	OrganiserName    string    `bun:"organiser_name"`
	CarrierID        *string   `bun:"carrier_id"`
	DriverID         *string   `bun:"driver_id"`
	CommodityID      int       `bun:"commodity_id"`
	CommodityName    string    `bun:"commodity_name"`
	WeightUnit       string    `bun:"weight_unit"`
	WeightConversion float64   `bun:"weight_conversion"`
	DeliveryDate     time.Time `bun:"delivery_date"`
	DeliveryDateISO  string    `bun:"delivery_date_iso"`
	Status           string    `bun:"status"`
	CreatorOrgID     string    `bun:"creator_org_id"`
	CreatedBy        string    `bun:"created_by"`
	CreatedAt        time.Time `bun:"created_at"`
	UpdatedAt        time.Time `bun:"updated_at"`
}

// fillLoads writes n loads spread like production's: 200 organisers, half the
// loads with one of 50 carriers, a third with one of 500 drivers, changes
// spread over 30 days; the test parties get their share. Then the planner's
// statistics are refreshed, so that EXPLAIN shows the plan it really picks.
func fillLoads(t *testing.T, db *bun.DB, n int) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	rows := make([]fillLoad, 0, 1000)
	for i := 0; i < n; i++ {
		org := fmt.Sprintf("org-%d", i%200)
		if i%200 == 7 {
			org = lt.Organiser.OrgID
		}
		r := fillLoad{
			ID: fmt.Sprintf("fill-%07d", i), Reference: fmt.Sprintf("F-%07d", i), OrganiserID: org, OrganiserName: org,
			CommodityID: lt.Wheat, CommodityName: "Wheat", WeightUnit: lt.Tonne, WeightConversion: lt.TonneKgs,
			DeliveryDate: now.AddDate(0, 0, i%700-350).Truncate(24 * time.Hour), Status: "completed",
			CreatorOrgID: org, CreatedBy: "fill", UpdatedAt: now.Add(-time.Duration(i%43200) * time.Minute),
		}
		r.DeliveryDateISO, r.CreatedAt = r.DeliveryDate.Format(time.DateOnly), r.UpdatedAt
		if i%2 == 0 {
			c := fmt.Sprintf("carrier-%d", i%50)
			if i%100 == 4 {
				c = lt.Carrier.OrgID
			}
			r.CarrierID = &c
		}
		if i%3 == 0 {
			d := fmt.Sprintf("driver-%d", i%500)
			if i%500 == 9 {
				d = lt.Driver.UserID
			}
			r.DriverID = &d
		}
		rows = append(rows, r)
		if len(rows) == cap(rows) || i == n-1 {
			if _, err := db.NewInsert().Model(&rows).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	analyse(t, db, "logistics_loads")
}

// analyse refreshes the planner's statistics of table (PostgreSQL also sets
// its visibility map, as autovacuum would, for index-only scans).
func analyse(t *testing.T, db *bun.DB, table string) {
	t.Helper()
	q := "ANALYZE " + table
	if db.Dialect().Name() == dialect.PG {
		q = "VACUUM ANALYZE " + table
	}
	if _, err := db.ExecContext(context.Background(), q); err != nil {
		t.Fatal(err)
	}
}

// TestUpdatedSinceReadsSinceIndexes: over 20,000 loads with fresh statistics,
// every statement of a catch-up (the count and the page, for an organiser, a
// carrier and a driver) searches the arms' (party, updated_at) indexes, and
// none scans the table or a whole index. The statements are those the store
// really issued, recorded on their way to the database.
func TestUpdatedSinceReadsSinceIndexes(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		fillLoads(t, db, 20000)
		rec := testkit.RecordQueries(db)
		since := "updatedSinceUTC=" + url.QueryEscape(time.Now().UTC().Add(-24*time.Hour).Format(time.RFC3339))
		arms := []string{"logistics_loads_organiser_since", "logistics_loads_carrier_since", "logistics_loads_driver_since"}
		for _, c := range []struct {
			name  string
			query string
		}{
			{"first page", since},
			{"page 2", since + "&offset=1&limit=1"},
			{"newest first", since + "&sortDesc=true"},
		} {
			for _, p := range []struct {
				name string
				who  func() []string
			}{
				{"organiser", func() []string {
					return rec.Record(func() { lt.Search(t, s, lt.Organiser, c.query) })
				}},
				{"carrier", func() []string { return rec.Record(func() { lt.Search(t, s, lt.Carrier, c.query) }) }},
				{"driver", func() []string { return rec.Record(func() { lt.Search(t, s, lt.Driver, c.query) }) }},
			} {
				t.Run(c.name+"/"+p.name, func(t *testing.T) {
					queries := p.who()
					// The count, then the page unless the count is 0.
					if len(queries) == 0 {
						t.Fatal("no statement recorded")
					}
					for _, q := range queries {
						testkit.AssertIndexed(t, db, q, testkit.Reads{Table: "logistics_loads", Aliases: []string{"load_row"}, Want: arms})
					}
				})
			}
		}
	})
}
