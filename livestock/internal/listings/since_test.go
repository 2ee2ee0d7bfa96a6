package listings_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// TestUpdatedSince: a catch-up answers the listings changed after the instant
// that the caller may see, its organisations' closed ones included, oldest
// change first; a malformed instant answers 400.
func TestUpdatedSince(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		closed := create(t, s, farmer, "sheep", validBody("sheep"))
		untouched := create(t, s, farmer, "cattle", validBody("cattle"))
		draft := create(t, s, farmer, "feed", with(validBody("feed"), "isDraft", true))
		edited := create(t, s, trader, "bedding", validBody("bedding"))
		if _, err := db.NewUpdate().Table("livestock_listings").Set("updated_at = ?", time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)).
			Where("1 = 1").Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		q := url.Values{"updatedSinceUTC": {"2021-01-01T00:00:00Z"}}
		if got, total := search(t, s, farmer, q); len(got) != 0 || total != 0 {
			t.Fatalf("nothing changed since 2021, got %v", ids(got))
		}
		do := func(p testkit.Request) {
			if r := s.Do(p); r.Status != http.StatusOK {
				t.Fatalf("%s %s: %d %s", p.Method, p.Path, r.Status, r.Body)
			}
		}
		do(testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/listings/" + closed + "/close", Token: s.Token(farmer), JSON: map[string]any{"status": "sold"}})
		do(testkit.Request{Method: http.MethodPatch, Path: "/livestock/v1/listings/" + edited, Token: s.Token(trader), JSON: map[string]any{"description": "Barley straw, big bales"}})
		do(testkit.Request{Method: http.MethodPatch, Path: "/livestock/v1/listings/" + draft, Token: s.Token(farmer), JSON: map[string]any{"description": "Hay, small bales"}})

		got, total := search(t, s, farmer, q)
		if want := []string{closed, edited, draft}; !slices.Equal(ids(got), want) || total != 3 {
			t.Fatalf("farmer's catch-up %v (%d), want %v (closed, edited, own draft; oldest change first)", ids(got), total, want)
		}
		if got[0].Status != "sold" || got[0].UpdatedAtUTC < "2021" {
			t.Fatalf("closed listing in catch-up: %+v", got[0])
		}
		// Others see only the active change: not the farmer's closure or draft.
		if got, _ := search(t, s, dealer, q); !slices.Equal(ids(got), []string{edited}) {
			t.Fatalf("dealer's catch-up %v, want [%s]", ids(got), edited)
		}
		// Filters and sorting still apply.
		if got, _ := search(t, s, farmer, with2(q, "f:status", "sold")); !slices.Equal(ids(got), []string{closed}) {
			t.Fatalf("with f:status=sold %v", ids(got))
		}
		if got, _ := search(t, s, farmer, with2(q, "sortDesc", "true")); !slices.Equal(ids(got), []string{draft, edited, closed}) {
			t.Fatalf("newest first %v", ids(got))
		}
		_ = untouched
		r := s.Do(testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/listings?updatedSinceUTC=last+week&minAge=-1", Token: s.Token(farmer)})
		wantPaths(t, r, "updatedSinceUTC", "minAge")
	})
}

func with2(q url.Values, k, v string) url.Values {
	out := url.Values{}
	for key, vals := range q {
		out[key] = vals
	}
	out.Set(k, v)
	return out
}
