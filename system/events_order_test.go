package system_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	pdb "github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/events"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// TestEventIDsFollowCommitOrderOnPostgres: of two transactions that write an
// event, the one that commits second has the higher id, even when it wrote
// its event first and stayed open while the other committed. So a live
// stream delivers both, in id order, and a reconnect with the id of the
// first commit replays the second. Before ids were commit-ordered the
// held-open transaction kept the lower id: the stream, having sent the
// higher one, dropped it, and so did the replay. (SQLite runs writers one at
// a time: the interleaving cannot happen there.)
func TestEventIDsFollowCommitOrderOnPostgres(t *testing.T) {
	db := testkit.DB(t, testkit.Postgres)
	s, base := replica(t, db, testkit.UniqueName("agritrade-events:")+":", nil)
	ann, _ := openStream(t, base, s.Token(evAnn), "")
	select {
	case <-ann.comment: // the stream is open and registered
	case <-time.After(5 * time.Second):
		t.Fatal("no opening comment")
	}
	ctx := context.Background()
	write := func(ctx context.Context, tx bun.Tx, n string) error {
		return events.Append(ctx, tx, events.Event{Type: events.TypeMessageCreated,
			Audiences: []string{events.User(evAnn.UserID)}, Data: map[string]string{"n": n}})
	}

	held, release, firstDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		firstDone <- pdb.InTx(ctx, s.Platform.DB, func(ctx context.Context, tx bun.Tx) error {
			if err := write(ctx, tx, "first"); err != nil {
				return err
			}
			close(held)
			<-release // stays open while the second transaction commits
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-firstDone:
		t.Fatalf("first transaction: %v", err)
	}
	if err := pdb.InTx(ctx, s.Platform.DB, func(ctx context.Context, tx bun.Tx) error { return write(ctx, tx, "second") }); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}

	// The log: the later commit has the higher id.
	var rows []struct {
		ID   int64  `bun:"id"`
		Data string `bun:"data"`
	}
	if err := db.NewSelect().Table("platform_events").Column("id", "data").Order("id").Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Data != `{"n":"second"}` || rows[1].Data != `{"n":"first"}` {
		t.Fatalf("events in id order: %+v, want second then first", rows)
	}
	// The live stream: both, in id order.
	e1, e2 := ann.next(t), ann.next(t)
	if e1.ID != rows[0].ID || e1.Data["n"] != "second" || e2.ID != rows[1].ID || e2.Data["n"] != "first" {
		t.Fatalf("stream sent %+v then %+v, want ids %d (second) then %d (first)", e1, e2, rows[0].ID, rows[1].ID)
	}
	// A reconnect after the first commit's event replays the other.
	again, _ := openStream(t, base, s.Token(evAnn), strconv.FormatInt(e1.ID, 10))
	if r := again.next(t); r.ID != e2.ID || r.Data["n"] != "first" {
		t.Fatalf("replay after %d sent %+v, want %d (first)", e1.ID, r, e2.ID)
	}
}
