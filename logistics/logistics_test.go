package logistics_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agritrade/api/logistics"
	"github.com/agritrade/api/logistics/internal/logisticstest"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

func TestAdminSettings(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		testkit.AdminSettingsScenarios(t, logisticstest.NewServer(t, db), logistics.Name, "system")
	})
}

// TestCreatorMigration runs migration 0003 over loads written under the old
// key: a load a carrier created naming another organisation (a carrier other
// than the organiser, never changed since) goes to the carrier's reference
// space, every other load to its organiser's; and it rolls back.
func TestCreatorMigration(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		ctx := context.Background()
		all, err := db.SQLMigrations(os.DirFS("migrations"))
		if err != nil {
			t.Fatal(err)
		}
		old := fstest.MapFS{}
		names, _ := fs.Glob(os.DirFS("migrations"), "000[12]_*.sql")
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join("migrations", n))
			if err != nil {
				t.Fatal(err)
			}
			old[n] = &fstest.MapFile{Data: b}
		}
		before, err := db.SQLMigrations(old)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.MigrateUp(ctx, bdb, logistics.Name, before); err != nil {
			t.Fatal(err)
		}
		created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		rows := []struct {
			id, organiser string
			carrier       any
			updated       time.Time
			creator       string
		}{
			{"l-own", "org-a", nil, created, "org-a"},                            // organiser form
			{"l-carrier-form", "org-a", "org-c", created, "org-c"},               // carrier form naming org-a
			{"l-carrier-self", "org-c", "org-c", created, "org-c"},               // carrier form for itself
			{"l-sent", "org-a", "org-c", created.Add(time.Hour), "org-a"},        // sent to a carrier later
			{"l-other-ref", "org-b", "org-c", created.Add(time.Minute), "org-b"}, // changed since: its organiser's
		}
		for i, r := range rows {
			_, err := bdb.ExecContext(ctx, `INSERT INTO logistics_loads (id, reference, organiser_id, organiser_name, carrier_id, carrier_name,
				commodity_id, commodity_name, weight_unit, weight_conversion, delivery_date, delivery_date_iso, status, created_by, created_at, updated_at)
				VALUES (?, ?, ?, 'O', ?, 'C', 1, 'Wheat', 'tonne', 1000, ?, '2026-01-02', 'upcoming', 'u', ?, ?)`,
				r.id, fmt.Sprintf("R-%d", i), r.organiser, r.carrier, created, created, r.updated)
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.MigrateUp(ctx, bdb, logistics.Name, all); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			var creator string
			if err := bdb.QueryRowContext(ctx, "SELECT creator_org_id FROM logistics_loads WHERE id = ?", r.id).Scan(&creator); err != nil {
				t.Fatal(err)
			}
			if creator != r.creator {
				t.Errorf("%s: creator %q, want %q", r.id, creator, r.creator)
			}
		}
		// The organiser org-a may now use the carrier's reference R-1 itself.
		if _, err := bdb.ExecContext(ctx, `INSERT INTO logistics_loads (id, reference, organiser_id, organiser_name, commodity_id, commodity_name,
			weight_unit, weight_conversion, delivery_date, delivery_date_iso, status, creator_org_id, created_by, created_at, updated_at)
			VALUES ('l-new', 'R-1', 'org-a', 'O', 1, 'Wheat', 'tonne', 1000, ?, '2026-01-02', 'upcoming', 'org-a', 'u', ?, ?)`, created, created, created); err != nil {
			t.Fatalf("org-a's own R-1 after the migration: %v", err)
		}
		if _, err := bdb.ExecContext(ctx, "DELETE FROM logistics_loads WHERE id = 'l-new'"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.MigrateDown(ctx, bdb, logistics.Name, all); err != nil {
			t.Fatalf("roll back: %v", err)
		}
		var n int
		if err := bdb.QueryRowContext(ctx, "SELECT count(*) FROM logistics_loads").Scan(&n); err != nil || n != len(rows) {
			t.Fatalf("after rolling back: %d loads (%v)", n, err)
		}
	})
}
