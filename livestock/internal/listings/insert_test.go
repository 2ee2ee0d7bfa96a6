package listings_test

import (
	"context"
	"testing"

	"github.com/agritrade/api/livestock/internal/listings"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/testkit"
	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// TestInsert_409_AFailingInsertUndoesItsTransaction: an insert that fails on
// the primary key fails the whole transaction: the listing written before it
// in the same transaction is gone too, on both dialects.
func TestInsert_409_AFailingInsertUndoesItsTransaction(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		s := newServer(t, bdb)
		id := create(t, s, farmer, "sheep", validBody("sheep"))
		ctx := context.Background()
		store := listings.NewStore(bdb)
		l, err := store.Get(ctx, id, "", false)
		if err != nil || l == nil {
			t.Fatalf("get %s: %v %v", id, l, err)
		}
		fresh := *l
		fresh.ID = uuid.Must(uuid.NewV7()).String()
		before := countRows(t, bdb)
		err = store.InTx(ctx, func(ctx context.Context, tx *listings.Store) error {
			if err := tx.InsertListing(ctx, &fresh); err != nil {
				return err
			}
			return tx.InsertListing(ctx, l)
		})
		if err == nil || !db.IsUniqueViolation(err) {
			t.Fatalf("inserting an existing id: %v, want a unique violation", err)
		}
		if got, _ := store.Get(ctx, fresh.ID, "", false); got != nil {
			t.Fatal("the listing inserted before the failure in the same transaction was kept")
		}
		if after := countRows(t, bdb); after != before {
			t.Fatalf("%d rows after the failed transaction, %d before", after, before)
		}
		// The database takes the next write (the transaction and the write
		// gate were released).
		create(t, s, farmer, "sheep", validBody("sheep"))
	})
}
