package messaging_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system/internal/messaging"
	"github.com/uptrace/bun"
)

// TestUpdatedSince: a catch-up lists the caller's conversations with a change
// after the instant, oldest change first, from the participants' copy of the
// change time that every message moves.
func TestUpdatedSince(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		a, b := client{s, s.Token(ann)}, client{s, s.Token(bob)}
		first := a.send(t, "/system/v1/conversations", map[string]any{"to": bob.UserID, "message": "Hello", "title": "first"})
		second := a.send(t, "/system/v1/conversations", map[string]any{"to": dave.UserID, "message": "Hi", "title": "second"})
		third := b.send(t, "/system/v1/conversations", map[string]any{"to": ann.UserID, "message": "Hey", "title": "third"})
		// Every change so far happened "in 2020".
		old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		for _, table := range []string{"system_conversations", "system_conversation_participants"} {
			if _, err := db.NewUpdate().Table(table).Set("updated_at = ?", old).Where("1 = 1").Exec(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		const since = "/system/v1/conversations?updatedSinceUTC=2021-01-01T00:00:00Z"
		list := func(c client, path string) []string {
			var page messaging.Page
			c.get(t, path, http.StatusOK).Decode(t, &page)
			out := []string{}
			for _, conv := range page.Docs {
				out = append(out, conv.ConversationID)
			}
			return out
		}
		if got := list(a, since); len(got) != 0 {
			t.Fatalf("nothing changed since 2021, got %v", got)
		}
		b.send(t, "/system/v1/conversations/"+third.ConversationID+"/messages", map[string]any{"to": ann.UserID, "message": "Still there?"})
		a.send(t, "/system/v1/conversations/"+first.ConversationID+"/messages", map[string]any{"to": bob.UserID, "message": "Yes"})
		if got, want := list(a, since), []string{third.ConversationID, first.ConversationID}; !slices.Equal(got, want) {
			t.Fatalf("ann's catch-up %v, want %v (oldest change first)", got, want)
		}
		if got, want := list(a, since+"&sortDesc=true"), []string{first.ConversationID, third.ConversationID}; !slices.Equal(got, want) {
			t.Fatalf("ann's catch-up newest first %v, want %v", got, want)
		}
		if got := list(client{s, s.Token(dave)}, since); len(got) != 0 {
			t.Fatalf("dave's conversation %s did not change, got %v", second.ConversationID, got)
		}
		r := a.get(t, since, http.StatusOK)
		if r.Header.Get("X-Total-Count") != "2" {
			t.Fatalf("X-Total-Count %q, want 2", r.Header.Get("X-Total-Count"))
		}
		r = a.get(t, "/system/v1/conversations?updatedSinceUTC=2021-13-01T00:00:00Z", http.StatusBadRequest)
		if e := r.Error(t); e.Code != "validation_failed" || !slices.Equal(e.Paths(), []string{"updatedSinceUTC"}) {
			t.Fatalf("malformed updatedSinceUTC: %s", r.Body)
		}
	})
}
