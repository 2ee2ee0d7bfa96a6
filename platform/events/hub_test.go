package events_test

import (
	"context"
	"testing"

	"github.com/agritrade/api/platform/bus"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/events"
	"github.com/agritrade/api/platform/schema"
	"github.com/agritrade/api/platform/testkit"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
)

// TestHubHandsOutEventsAnnouncedOutOfOrderInIDOrder: announcements reach a
// hub out of id order (commits announced side by side, other replicas over
// the bus). A stream sends only ids above its last, so the hub fills the gap
// an announcement reveals from the log, before it, and skips the late
// announcement of what it filled: the stream gets every event once, in id order.
func TestHubHandsOutEventsAnnouncedOutOfOrderInIDOrder(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		ctx := context.Background()
		ms, err := schema.Migrations()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.MigrateUp(ctx, bdb, schema.Name, ms); err != nil {
			t.Fatal(err)
		}
		ids := make([]int64, 3)
		for i := range ids {
			if err := db.InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
				return events.Append(ctx, tx, events.Event{Type: events.TypeMessageCreated,
					Audiences: []string{events.User("u")}, Data: map[string]int{"n": i}})
			}); err != nil {
				t.Fatal(err)
			}
			if err := bdb.NewSelect().Table("platform_events").ColumnExpr("MAX(id)").Scan(ctx, &ids[i]); err != nil {
				t.Fatal(err)
			}
		}
		logger := logrus.New()
		h := events.NewHub(bdb, bus.NewMemory(), logger, events.Options{})
		ch, err := h.Listen("u", []string{events.User("u")})
		if err != nil {
			t.Fatal(err)
		}
		// The third is announced before the second.
		h.FanOut(ctx, ids[0], ids[2], ids[1])
		var got []int64
		for len(ch) > 0 {
			got = append(got, (<-ch).ID)
		}
		if len(got) != 3 || got[0] != ids[0] || got[1] != ids[1] || got[2] != ids[2] {
			t.Fatalf("the stream was offered %v, want %v once each in that order", got, ids)
		}
	})
}
