package listings_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/agritrade/api/platform/outbox"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

const savedPath = "/livestock/v1/saved-searches"

func saveSearch(t *testing.T, s *testkit.Server, tok, name string, query map[string]any) string {
	t.Helper()
	r := s.Do(testkit.Request{Method: http.MethodPost, Path: savedPath, Token: tok, JSON: map[string]any{"name": name, "query": query}})
	if r.Status != http.StatusOK {
		t.Fatalf("save %s: %d %s", name, r.Status, r.Body)
	}
	return r.Map(t)["id"].(string)
}

// alerts answers the (search, listing) pairs alerted, and checks that each
// has exactly one outbox notification and one stream event for its owner. It
// first waits for the alerts runner to empty the queue of new listings.
func alerts(t *testing.T, db *bun.DB) []string {
	t.Helper()
	ctx := context.Background()
	waitAlertQueueEmpty(t, db)
	var rows []struct {
		SearchID  string `bun:"search_id"`
		ListingID string `bun:"listing_id"`
		UserID    string `bun:"user_id"`
	}
	if err := db.NewSelect().TableExpr("livestock_saved_search_alerts AS al").ColumnExpr("al.search_id, al.listing_id, s.user_id").
		Join("JOIN livestock_saved_searches AS s ON s.id = al.search_id").OrderExpr("al.created_at, al.search_id").Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	notes, err := outbox.List(ctx, db, outbox.Filter{Type: "listing.alert", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var evs []struct {
		Data     string `bun:"data"`
		Audience string `bun:"audience"`
	}
	if err := db.NewSelect().TableExpr("platform_events AS e").ColumnExpr("e.data, a.audience").
		Join("JOIN platform_event_audiences AS a ON a.event_id = e.id").Where("e.type = 'listing.alert'").Scan(ctx, &evs); err != nil {
		t.Fatal(err)
	}
	// Alerts of a deleted search go with it; their notifications stay sent.
	if len(notes) != len(evs) || len(notes) < len(rows) {
		t.Fatalf("%d alerts, %d notifications, %d stream events", len(rows), len(notes), len(evs))
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.SearchID + "/" + r.ListingID
		found := 0
		for _, e := range evs {
			var d struct{ SavedSearchID, ListingID string }
			_ = json.Unmarshal([]byte(e.Data), &d)
			if d.SavedSearchID == r.SearchID && d.ListingID == r.ListingID && e.Audience == "user:"+r.UserID {
				found++
			}
		}
		for _, n := range notes {
			var d struct{ SavedSearchID, ListingID string }
			_ = json.Unmarshal([]byte(n.Data), &d)
			if d.SavedSearchID == r.SearchID && d.ListingID == r.ListingID && slices.Equal(n.RecipientList(), []string{r.UserID}) {
				found++
			}
		}
		if found != 2 {
			t.Fatalf("alert %s: %d of its notification and event found", out[i], found)
		}
	}
	return out
}

func TestSavedSearchesAndAlerts(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		tradeTok, dealTok := s.Token(trader), s.Token(dealer)
		nearThirsk := saveSearch(t, s, tradeTok, "Sheep near Thirsk", map[string]any{"f:commodityType": []string{"sheep"}, "latitude": 54.2, "longitude": -1.3, "distanceKm": 40})
		texel := saveSearch(t, s, dealTok, "Texel anywhere", map[string]any{"f:commodityBreed": "Texel", "f:status": "active-selling"})
		saveSearch(t, s, dealTok, "Cattle", map[string]any{"f:commodityType": "cattle", "minAge": 6})
		saveSearch(t, s, tradeTok, "My sold ones", map[string]any{"f:status": "sold"})

		// The query is validated by the search's own parser: the same 400 and validation[].
		bad := map[string]any{"latitude": 100, "distanceKm": 5, "f:commoditySexes": "dragons", "minAge": 9, "maxAge": 3}
		viaSearch := s.Do(testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/listings?latitude=100&distanceKm=5&f:commoditySexes=dragons&minAge=9&maxAge=3", Token: tradeTok})
		viaSaved := s.Do(testkit.Request{Method: http.MethodPost, Path: savedPath, Token: tradeTok, JSON: map[string]any{"name": "bad", "query": bad}})
		wantPaths(t, viaSaved, viaSearch.Error(t).Paths()...)
		a, _ := json.Marshal(viaSearch.Error(t).Validation)
		b, _ := json.Marshal(viaSaved.Error(t).Validation)
		if string(a) != string(b) {
			t.Fatalf("validation[] differs\nsearch %s\nsaved  %s", a, b)
		}
		r := s.Do(testkit.Request{Method: http.MethodPost, Path: savedPath, Token: tradeTok, JSON: map[string]any{"query": map[string]any{"limit": 5, "f:commodityType": map[string]any{}}}})
		wantPaths(t, r, "name", "limit", "f:commodityType")
		r = s.Do(testkit.Request{Method: http.MethodPost, Path: savedPath, Token: tradeTok, JSON: map[string]any{"name": "x", "query": map[string]any{"latitude": "north"}}})
		if r.Status != 400 {
			t.Fatalf("unparseable number: %d %s", r.Status, r.Body)
		}

		// New listings: a Texel sheep listing at Thirsk matches both the trader's
		// area search and the dealer's Texel search; one far away only the
		// latter; the trader's own listing never alerts the trader.
		thirsk := create(t, s, farmer, "sheep", validBody("sheep"))
		far := create(t, s, farmer, "sheep", with(validBody("sheep"), "location", location("Truro", "TR1 1AA", 50.26, -5.05)))
		own := create(t, s, trader, "sheep", validBody("sheep"))
		buying := create(t, s, farmer, "sheep", with(validBody("sheep"), "type", "buying"))
		draft := create(t, s, farmer, "sheep", with(validBody("sheep"), "isDraft", true))
		got := alerts(t, db)
		want := []string{nearThirsk + "/" + thirsk, texel + "/" + thirsk, texel + "/" + far, texel + "/" + own, nearThirsk + "/" + buying}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("alerts %v\nwant   %v", got, want)
		}
		// Publishing the draft makes it newly active.
		if r := s.Do(testkit.Request{Method: http.MethodPatch, Path: "/livestock/v1/listings/" + draft, Token: s.Token(farmer), JSON: map[string]any{"isDraft": false}}); r.Status != 200 {
			t.Fatalf("publish: %d %s", r.Status, r.Body)
		}
		if got := alerts(t, db); len(got) != 7 || !slices.Contains(got, nearThirsk+"/"+draft) || !slices.Contains(got, texel+"/"+draft) {
			t.Fatalf("after publishing the draft: %v", got)
		}
		// An edit of an active listing is not a new listing: no second alert.
		if r := s.Do(testkit.Request{Method: http.MethodPatch, Path: "/livestock/v1/listings/" + thirsk, Token: s.Token(farmer), JSON: map[string]any{"description": "Still here"}}); r.Status != 200 {
			t.Fatalf("edit: %d", r.Status)
		}
		if got := alerts(t, db); len(got) != 7 {
			t.Fatalf("an edit alerted again: %v", got)
		}

		// List and delete: one's own only; others' answer 404.
		var mine []struct{ ID, Name string }
		r = s.Do(testkit.Request{Method: http.MethodGet, Path: savedPath, Token: tradeTok})
		r.Decode(t, &mine)
		if len(mine) != 2 || r.Header.Get("X-Total-Count") != "2" || mine[1].ID != nearThirsk {
			t.Fatalf("trader's saved searches %+v (%s)", mine, r.Header.Get("X-Total-Count"))
		}
		s.Run(t, []testkit.Scenario{
			{Name: "deleteOthers404", Req: testkit.Request{Method: http.MethodDelete, Path: savedPath + "/" + nearThirsk, Token: dealTok}, Status: 404, Code: "not_found"},
			{Name: "deleteUnknown404", Req: testkit.Request{Method: http.MethodDelete, Path: savedPath + "/nope", Token: tradeTok}, Status: 404, Code: "not_found"},
			{Name: "delete200", Req: testkit.Request{Method: http.MethodDelete, Path: savedPath + "/" + nearThirsk, Token: tradeTok}, Status: 200},
			{Name: "deleteAgain404", Req: testkit.Request{Method: http.MethodDelete, Path: savedPath + "/" + nearThirsk, Token: tradeTok}, Status: 404, Code: "not_found"},
			{Name: "list401", Req: testkit.Request{Method: http.MethodGet, Path: savedPath}, Status: 401, Code: unauthorised},
			{Name: "listBadLimit400", Req: testkit.Request{Method: http.MethodGet, Path: savedPath + "?limit=500", Token: tradeTok}, Status: 400, Code: "validation_failed"},
		})
		// A deleted search alerts no more.
		create(t, s, farmer, "sheep", validBody("sheep"))
		if got := alerts(t, db); len(got) != 5 || !slices.Contains(got, texel+"/"+own) || slices.ContainsFunc(got, func(a string) bool { return a[:len(nearThirsk)] == nearThirsk }) {
			t.Fatalf("after deleting the area search, only the Texel search alerts: %v", got)
		}
	})
}

// waitAlertQueueEmpty waits until every listing queued for matching has
// been matched (the server's alerts runner works after the create commits).
func waitAlertQueueEmpty(t *testing.T, db *bun.DB) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n, err := db.NewSelect().TableExpr("livestock_alert_queue").Count(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d listings still wait to be matched after 15 s", n)
		}
	}
}

// TestAlertQueue_MatchedOnceEvenIfQueuedAgain: a listing left in the queue (a
// replica that died between the create's commit and its matching) is matched
// by the runner at its next pass, a listing queued again alerts nobody twice,
// and a listing no longer active at its turn alerts nobody.
func TestAlertQueue_MatchedOnceEvenIfQueuedAgain(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		ctx := context.Background()
		search := saveSearch(t, s, s.Token(trader), "Any sheep", map[string]any{"f:commodityType": []string{"sheep"}})
		first := create(t, s, farmer, "sheep", validBody("sheep"))
		if got := alerts(t, db); !slices.Equal(got, []string{search + "/" + first}) {
			t.Fatalf("after the create: alerts %v", got)
		}
		requeue := func(id string) {
			t.Helper()
			if _, err := db.NewRaw("INSERT INTO livestock_alert_queue (listing_id, queued_at) VALUES (?, ?)", id, time.Now().UTC()).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// Queued again (as by a dead replica): matched again, alerted once.
		requeue(first)
		if got := alerts(t, db); !slices.Equal(got, []string{search + "/" + first}) {
			t.Fatalf("a listing queued twice: alerts %v", got)
		}
		// No longer active at its turn (here a draft): the queue row is
		// consumed, nobody alerted.
		draft := create(t, s, farmer, "sheep", with(validBody("sheep"), "isDraft", true))
		requeue(draft)
		if got := alerts(t, db); !slices.Equal(got, []string{search + "/" + first}) {
			t.Fatalf("a queued draft alerted: %v", got)
		}
	})
}
