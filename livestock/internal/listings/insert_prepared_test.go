package listings_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agritrade/api/livestock/internal/listings"
	"github.com/agritrade/api/platform/testkit"
	"github.com/google/uuid"
)

// TestInsert_200_PreparedRowEqualsBunsRow: on SQLite a listing's insert is
// a prepared statement with its own argument list (db.Prepared), not bun's.
// The row it writes must be the row bun writes for the same listing, column
// by column, in storage class and value: a time stored in another text form
// would sort apart from bun's, a bool or a NULL in another class would miss
// the search's comparisons. The listing is created through the API (the
// prepared path), read back, and written again under another id by
// BulkInsert (bun's statement).
func TestInsert_200_PreparedRowEqualsBunsRow(t *testing.T) {
	bdb := testkit.DB(t, testkit.SQLite)
	s := newServer(t, bdb)
	ctx := context.Background()
	store := listings.NewStore(bdb)
	for _, kind := range []string{"sheep", "cattle", "working-dog", "feed", "bedding"} {
		id := create(t, s, farmer, kind, validBody(kind))
		l, err := store.Get(ctx, id, "", false)
		if err != nil || l == nil {
			t.Fatalf("get %s: %v %v", id, l, err)
		}
		copied := *l
		copied.ID = uuid.Must(uuid.NewV7()).String()
		if err := store.BulkInsert(ctx, []*listings.Listing{&copied}); err != nil {
			t.Fatal(err)
		}
		var cols []string
		if err := bdb.NewRaw("SELECT name FROM pragma_table_info('livestock_listings') WHERE name <> 'id' ORDER BY cid").Scan(ctx, &cols); err != nil {
			t.Fatal(err)
		}
		if len(cols) < 20 {
			t.Fatalf("read %d columns of livestock_listings", len(cols))
		}
		exprs := make([]string, len(cols))
		for i, c := range cols {
			exprs[i] = fmt.Sprintf("typeof(%[1]s) || ':' || quote(%[1]s)", c)
		}
		row := func(id string) []string {
			vals := make([]string, len(cols))
			dest := make([]any, len(cols))
			for i := range vals {
				dest[i] = &vals[i]
			}
			if err := bdb.QueryRowContext(ctx, "SELECT "+strings.Join(exprs, ", ")+" FROM livestock_listings WHERE id = ?", id).Scan(dest...); err != nil {
				t.Fatal(err)
			}
			return vals
		}
		prepared, buns := row(id), row(copied.ID)
		for i, c := range cols {
			if prepared[i] != buns[i] {
				t.Errorf("%s %s: prepared insert wrote %s, bun writes %s", kind, c, prepared[i], buns[i])
			}
		}
	}
}
