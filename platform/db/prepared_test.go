package db_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

type pointRow struct {
	bun.BaseModel `bun:"table:points"`

	ID   string    `bun:"id,pk"`
	Kind string    `bun:"kind"`
	X    float64   `bun:"x"`
	At   time.Time `bun:"at"`
}

// TestBinder_SameRowsAsInlinedValues: a query whose values a Binder binds
// answers the rows of the same query with the values in its text, on the pool
// and in a transaction, on both dialects (PostgreSQL callers bind with the nil
// Binder); on SQLite the pool prepares each text once, whatever the values.
func TestBinder_SameRowsAsInlinedValues(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		ctx := context.Background()
		if _, err := bdb.NewCreateTable().Model((*pointRow)(nil)).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		at := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
		rows := []pointRow{{ID: "a", Kind: "sheep", X: 1.5, At: at}, {ID: "b", Kind: "sheep", X: 2.5, At: at.Add(time.Hour)},
			{ID: "c", Kind: "cattle", X: 3.5, At: at}, {ID: "d", Kind: "sheep", X: 4.5, At: at.Add(2 * time.Hour)}}
		if _, err := bdb.NewInsert().Model(&rows).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		conn := db.NewConn(bdb)
		var b *db.Binder
		if !db.IsPostgres(bdb) {
			b = &db.Binder{}
		}
		ids := func(c db.Conn, b *db.Binder, kind string, maxX float64, kinds []string, after *time.Time) []string {
			t.Helper()
			var got []pointRow
			q := c.NewSelect().Model(&got).Where("kind = ?", b.Arg(kind)).Where("x <= ?", b.Arg(maxX)).
				Where("kind IN (?)", db.BindList(b, kinds)).Order("id")
			if after != nil {
				q.Where("at > ?", b.Arg(*after)) // a time is written into the text, as bun writes it
			}
			if err := q.Conn(c.Prepared(b)).Scan(ctx); err != nil {
				t.Fatal(err)
			}
			out := []string{}
			for _, r := range got {
				out = append(out, r.ID)
			}
			return out
		}
		fresh := func() *db.Binder {
			if b == nil {
				return nil
			}
			return &db.Binder{}
		}
		cases := []struct {
			kind  string
			maxX  float64
			kinds []string
			after *time.Time
		}{
			{"sheep", 3, []string{"sheep", "cattle"}, nil},
			{"sheep", 5, []string{"sheep"}, nil},
			{"cattle", 5, []string{"cattle", "sheep"}, nil},
			{"sheep", 5, []string{"sheep"}, &at},
		}
		for _, c := range cases {
			want := ids(conn, nil, c.kind, c.maxX, c.kinds, c.after)
			if got := ids(conn, fresh(), c.kind, c.maxX, c.kinds, c.after); !slices.Equal(got, want) {
				t.Errorf("bound %+v: %v, inlined %v", c, got, want)
			}
			err := conn.InTx(ctx, func(ctx context.Context, tx db.Conn) error {
				if got := ids(tx, fresh(), c.kind, c.maxX, c.kinds, c.after); !slices.Equal(got, want) {
					t.Errorf("bound in a transaction %+v: %v, inlined %v", c, got, want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if want := []string{"a", "b", "d"}; !slices.Equal(ids(conn, fresh(), "sheep", 5, []string{"sheep", "cattle"}, nil), want) {
			t.Errorf("sheep up to 5: want %v", want)
		}
		if !db.IsPostgres(bdb) {
			// Cases 1 and 3 share a text (two kinds), case 2 has one kind; the
			// time of case 4 is in its text, which is not kept.
			if n := db.PreparedStatements(bdb); n != 2 {
				t.Errorf("%d statements prepared, want 2 (one per text)", n)
			}
		}
	})
}
