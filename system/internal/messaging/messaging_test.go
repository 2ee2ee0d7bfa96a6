package messaging_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/outbox"
	"github.com/agritrade/api/platform/outbox/outboxtest"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
	"github.com/agritrade/api/system/internal/messaging"
	"github.com/uptrace/bun"
)

// Users of two organisations: ann and carl work for the same farm, bob for a buyer.
var (
	ann  = auth.Principal{UserID: "user-ann", Name: "Ann Smith", OrgID: "org-farm", OrgName: "Smith Farms", Orgs: []string{"org-farm"}}
	carl = auth.Principal{UserID: "user-carl", Name: "Carl Smith", OrgID: "org-farm", OrgName: "Smith Farms", Orgs: []string{"org-farm"}}
	bob  = auth.Principal{UserID: "user-bob", Name: "Bob Buyer", OrgID: "org-buyer", OrgName: "Buyer Ltd", Orgs: []string{"org-buyer"}}
	dave = auth.Principal{UserID: "user-dave", Name: "Dave Dealer", OrgID: "org-dealer", OrgName: "Dealer & Co", Orgs: []string{"org-dealer"}}
)

func newServer(t *testing.T, db *bun.DB) *testkit.Server {
	return testkit.NewServer(t, db, func(p *app.Platform) []module.Module {
		return []module.Module{system.New(p.Deps(system.Name))}
	})
}

type client struct {
	s     *testkit.Server
	token string
}

func (c client) send(t *testing.T, path string, body map[string]any) messaging.Conversation {
	t.Helper()
	r := c.s.Do(testkit.Request{Method: http.MethodPost, Path: path, Token: c.token, JSON: body})
	if r.Status != http.StatusOK {
		t.Fatalf("POST %s: %d %s\nlog:\n%s", path, r.Status, r.Body, c.s.Logs.String())
	}
	var conv messaging.Conversation
	r.Decode(t, &conv)
	return conv
}

func (c client) get(t *testing.T, path string, want int) *testkit.Response {
	t.Helper()
	r := c.s.Do(testkit.Request{Method: http.MethodGet, Path: path, Token: c.token})
	if r.Status != want {
		t.Fatalf("GET %s: %d, want %d: %s", path, r.Status, want, r.Body)
	}
	return r
}

func (c client) conversation(t *testing.T, id string) messaging.Conversation {
	t.Helper()
	var conv messaging.Conversation
	c.get(t, "/system/v1/conversations/"+id, http.StatusOK).Decode(t, &conv)
	return conv
}

func (c client) list(t *testing.T, query string) (messaging.Page, *testkit.Response) {
	t.Helper()
	r := c.get(t, "/system/v1/conversations"+query, http.StatusOK)
	var p messaging.Page
	r.Decode(t, &p)
	return p, r
}

func messageEvents(t *testing.T, s *testkit.Server) []outbox.Record {
	t.Helper()
	recs, err := outbox.List(context.Background(), s.Platform.DB, outbox.Filter{Type: messaging.EventMessage, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestVisibilityAcrossOrganisations(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		a, b, c, d := client{s, s.Token(ann)}, client{s, s.Token(bob)}, client{s, s.Token(carl)}, client{s, s.Token(dave)}
		admin := client{s, s.Token(testkit.Admin)}
		conv := a.send(t, "/system/v1/conversations", map[string]any{"to": bob.UserID, "message": "Are the Texel ewes still for sale?", "title": "Texel ewes",
			"listingId": "listing-1", "listingType": "livestock"})
		id := conv.ConversationID
		path := "/system/v1/conversations/" + id
		msgPath := path + "/messages"
		reply := map[string]any{"to": ann.UserID, "message": "Yes"}
		s.Run(t, []testkit.Scenario{
			{Name: "get200sender", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: a.token}, Status: 200},
			{Name: "get200recipient", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: b.token}, Status: 200},
			{Name: "get404sameOrganisationAsSender", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: c.token}, Status: 404, Code: "not_found"},
			{Name: "get404otherOrganisation", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: d.token}, Status: 404, Code: "not_found"},
			{Name: "get404admin", Req: testkit.Request{Method: http.MethodGet, Path: path, Token: admin.token}, Status: 404, Code: "not_found"},
			{Name: "get404unknown", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/conversations/01900000-0000-7000-8000-000000000000", Token: a.token}, Status: 404, Code: "not_found"},
			{Name: "get401", Req: testkit.Request{Method: http.MethodGet, Path: path}, Status: 401, Code: "unauthorized"},
			{Name: "list401", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/conversations"}, Status: 401, Code: "unauthorized"},
			{Name: "add404outsider", Req: testkit.Request{Method: http.MethodPost, Path: msgPath, Token: c.token, JSON: reply}, Status: 404, Code: "not_found"},
			{Name: "add404admin", Req: testkit.Request{Method: http.MethodPost, Path: msgPath, Token: admin.token, JSON: reply}, Status: 404, Code: "not_found"},
			{Name: "create404outsiderConversationId", Req: testkit.Request{Method: http.MethodPost, Path: "/system/v1/conversations", Token: d.token,
				JSON: map[string]any{"to": ann.UserID, "message": "let me in", "conversationId": id}}, Status: 404, Code: "not_found"},
			{Name: "add401", Req: testkit.Request{Method: http.MethodPost, Path: msgPath, JSON: reply}, Status: 401, Code: "unauthorized"},
			{Name: "listing200recipient", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/conversations/listing/listing-1", Token: b.token}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					if r.Map(t)["conversationId"] != id {
						t.Fatalf("listing conversation %s", r.Body)
					}
				}},
			{Name: "listing404outsider", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/conversations/listing/listing-1", Token: c.token}, Status: 404, Code: "not_found"},
			{Name: "add200recipient", Req: testkit.Request{Method: http.MethodPost, Path: msgPath, Token: b.token, JSON: reply}, Status: 200},
		})
		for _, who := range []client{c, d, admin} {
			if p, r := who.list(t, ""); p.TotalDocs != 0 || len(p.Docs) != 0 || r.Header.Get("X-Total-Count") != "0" {
				t.Fatalf("an outsider lists %s", r.Body)
			}
		}
		// Nothing an outsider tried left a trace.
		if got := a.conversation(t, id); len(got.Messages) != 2 || len(got.Participants) != 2 {
			t.Fatalf("conversation after outsider attempts: %+v", got)
		}
		// Adding someone makes them a participant: carl can read it from then on.
		a.send(t, msgPath, map[string]any{"to": carl.UserID, "message": "Carl, can you load them on Friday?"})
		got := c.conversation(t, id)
		if len(got.Participants) != 3 || len(got.Messages) != 3 {
			t.Fatalf("carl's view %+v", got)
		}
	})
}

func TestMessagesNamesUnreadAndNotifications(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		a, b := client{s, s.Token(ann)}, client{s, s.Token(bob)}
		conv := a.send(t, "/system/v1/conversations", map[string]any{"to": bob.UserID, "message": "Hello Bob"})
		if conv.Title != nil || conv.ListingID != nil || conv.ListingType != nil || conv.Unread != 0 {
			t.Fatalf("new conversation %+v", conv)
		}
		if len(conv.Messages) != 1 || conv.Messages[0].SentByID != ann.UserID || conv.Messages[0].SentByName != "Ann Smith" || conv.Messages[0].Message != "Hello Bob" {
			t.Fatalf("messages %+v", conv.Messages)
		}
		// Bob is known only by id until his own token names him.
		if fmt.Sprint(conv.Participants) != "[{user-ann Ann Smith} {user-bob }]" {
			t.Fatalf("participants %+v", conv.Participants)
		}
		id := conv.ConversationID
		page, _ := b.list(t, "")
		if len(page.Docs) != 1 || page.Docs[0].Unread != 1 {
			t.Fatalf("bob's list %+v", page)
		}
		if got := b.conversation(t, id); got.Unread != 1 {
			t.Fatalf("first read shows %d unread, want 1", got.Unread)
		}
		if got := b.conversation(t, id); got.Unread != 0 {
			t.Fatalf("second read shows %d unread, want 0", got.Unread)
		}
		a.send(t, "/system/v1/conversations/"+id+"/messages", map[string]any{"to": bob.UserID, "message": "Price?"})
		a.send(t, "/system/v1/conversations", map[string]any{"to": bob.UserID, "message": "£120 a head?", "conversationId": id})
		if page, _ := b.list(t, ""); page.Docs[0].Unread != 2 {
			t.Fatalf("bob's unread %d, want 2", page.Docs[0].Unread)
		}
		replied := b.send(t, "/system/v1/conversations/"+id+"/messages", map[string]any{"to": ann.UserID, "message": "Deal."})
		if replied.Unread != 0 || len(replied.Messages) != 4 || replied.Messages[3].SentByName != "Bob Buyer" {
			t.Fatalf("bob's reply %+v", replied)
		}
		if fmt.Sprint(replied.Participants) != "[{user-ann Ann Smith} {user-bob Bob Buyer}]" {
			t.Fatalf("participants after bob spoke %+v", replied.Participants)
		}
		if page, _ := b.list(t, ""); page.Docs[0].Unread != 0 {
			t.Fatalf("bob's unread after replying %d", page.Docs[0].Unread)
		}
		if page, _ := a.list(t, ""); page.Docs[0].Unread != 1 {
			t.Fatalf("ann's unread %d, want 1", page.Docs[0].Unread)
		}
		// Messages are oldest first, with RFC 3339 UTC times.
		full := a.conversation(t, id)
		var texts []string
		for _, m := range full.Messages {
			texts = append(texts, m.Message)
			if !strings.HasSuffix(m.CreatedAtUTC, "Z") {
				t.Fatalf("time %s", m.CreatedAtUTC)
			}
		}
		if strings.Join(texts, "|") != "Hello Bob|Price?|£120 a head?|Deal." {
			t.Fatalf("order %v", texts)
		}
		// One notification per message, to everyone but the sender, with the message.
		events := messageEvents(t, s)
		if len(events) != 4 {
			t.Fatalf("%d notification events, want 4", len(events))
		}
		for _, e := range events {
			n := e.Notification()
			var sender string
			switch strings.Join(n.Recipients, ",") {
			case bob.UserID:
				sender = ann.UserID
			case ann.UserID:
				sender = bob.UserID
			default:
				t.Fatalf("recipients %v", n.Recipients)
			}
			if !strings.Contains(string(n.Data), `"conversationId":"`+id+`"`) || !strings.Contains(string(n.Data), `"sentById":"`+sender+`"`) {
				t.Fatalf("event data %s", n.Data)
			}
		}
	})
}

func TestListingConversations(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		a, b, d := client{s, s.Token(ann)}, client{s, s.Token(bob)}, client{s, s.Token(dave)}
		first := a.send(t, "/system/v1/conversations", map[string]any{"to": bob.UserID, "message": "Is the hay still there?", "listingId": "L-7", "listingType": "crop", "title": "Hay"})
		if first.ListingID == nil || *first.ListingID != "L-7" || first.ListingType == nil || *first.ListingType != "crop" || first.Title == nil || *first.Title != "Hay" {
			t.Fatalf("listing conversation %+v", first)
		}
		// A second message about the same listing between the same users continues it.
		again := a.send(t, "/system/v1/conversations", map[string]any{"to": bob.UserID, "message": "And the straw?", "listingId": "L-7", "listingType": "crop"})
		if again.ConversationID != first.ConversationID || len(again.Messages) != 2 {
			t.Fatalf("second message opened %s, want %s", again.ConversationID, first.ConversationID)
		}
		var mine messaging.Conversation
		a.get(t, "/system/v1/conversations/listing/L-7", http.StatusOK).Decode(t, &mine)
		if mine.ConversationID != first.ConversationID {
			t.Fatalf("ann's listing conversation %s", mine.ConversationID)
		}
		other := d.send(t, "/system/v1/conversations", map[string]any{"to": bob.UserID, "message": "I'll take all the hay", "listingId": "L-7", "listingType": "crop"})
		if other.ConversationID == first.ConversationID {
			t.Fatal("dave joined ann's conversation")
		}
		var bobs messaging.Conversation
		b.get(t, "/system/v1/conversations/listing/L-7", http.StatusOK).Decode(t, &bobs)
		if bobs.ConversationID != other.ConversationID {
			t.Fatalf("bob's listing conversation is %s, want the most recent %s", bobs.ConversationID, other.ConversationID)
		}
		a.get(t, "/system/v1/conversations/listing/L-8", http.StatusNotFound)
		// A different title on a continued listing conversation is refused.
		r := s.Do(testkit.Request{Method: http.MethodPost, Path: "/system/v1/conversations", Token: a.token,
			JSON: map[string]any{"to": bob.UserID, "message": "x", "listingId": "L-7", "listingType": "crop", "title": "Straw"}})
		if r.Status != 400 || strings.Join(r.Error(t).Paths(), ",") != "title" {
			t.Fatalf("title mismatch: %d %s", r.Status, r.Body)
		}
	})
}

func TestValidationChangesNothing(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		a := client{s, s.Token(ann)}
		conv := a.send(t, "/system/v1/conversations", map[string]any{"to": bob.UserID, "message": "hi", "title": "Wheat", "listingId": "L-1", "listingType": "crop"})
		add := "/system/v1/conversations/" + conv.ConversationID + "/messages"
		create := "/system/v1/conversations"
		paths := func(want ...string) func(t *testing.T, r *testkit.Response) {
			return func(t *testing.T, r *testkit.Response) {
				got := r.Error(t).Paths()
				sort.Strings(got)
				sort.Strings(want)
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("validation paths %v, want %v", got, want)
				}
			}
		}
		req := func(path string, body any) testkit.Request {
			return testkit.Request{Method: http.MethodPost, Path: path, Token: a.token, JSON: body}
		}
		s.Run(t, []testkit.Scenario{
			{Name: "create400empty", Req: req(create, map[string]any{}), Status: 400, Code: "validation_failed", Check: paths("to", "message")},
			{Name: "create400every", Req: req(create, map[string]any{"to": ann.UserID, "message": strings.Repeat("x", 5001), "listingId": "L", "listingType": "sheep", "title": strings.Repeat("t", 201)}),
				Status: 400, Code: "validation_failed", Check: paths("to", "message", "listingType", "title")},
			{Name: "create400listingTypeWithoutId", Req: req(create, map[string]any{"to": bob.UserID, "message": "m", "listingType": "crop"}), Status: 400, Code: "validation_failed", Check: paths("listingId")},
			{Name: "create400listingIdWithoutType", Req: req(create, map[string]any{"to": bob.UserID, "message": "m", "listingId": "L-1"}), Status: 400, Code: "validation_failed", Check: paths("listingType")},
			{Name: "create400blankMessage", Req: req(create, map[string]any{"to": bob.UserID, "message": "   "}), Status: 400, Code: "validation_failed", Check: paths("message")},
			{Name: "create400wrongType", Req: req(create, map[string]any{"to": 42, "message": "m"}), Status: 400, Code: "validation_failed", Check: paths("to")},
			{Name: "create400malformed", Req: req(create, `{"to":`), Status: 400, Code: "bad_request"},
			{Name: "add400conversationIdMismatch", Req: req(add, map[string]any{"to": bob.UserID, "message": "m", "conversationId": "another"}), Status: 400, Code: "validation_failed", Check: paths("conversationId")},
			{Name: "add400listingMismatch", Req: req(add, map[string]any{"to": bob.UserID, "message": "m", "listingId": "L-2", "listingType": "livestock", "title": "Barley"}),
				Status: 400, Code: "validation_failed", Check: paths("listingId", "listingType", "title")},
			{Name: "add400newRecipientButInvalid", Req: req(add, map[string]any{"to": carl.UserID, "message": "m", "title": "Barley"}), Status: 400, Code: "validation_failed", Check: paths("title")},
			{Name: "add200sameListing", Req: req(add, map[string]any{"to": bob.UserID, "message": "m", "listingId": "L-1", "listingType": "crop", "title": "Wheat"}), Status: 200},
		})
		got := a.conversation(t, conv.ConversationID)
		if len(got.Messages) != 2 || len(got.Participants) != 2 {
			t.Fatalf("failed requests changed the conversation: %+v", got)
		}
		if page, _ := a.list(t, ""); page.TotalDocs != 1 {
			t.Fatalf("failed requests created conversations: %d", page.TotalDocs)
		}
		if n := len(messageEvents(t, s)); n != 2 {
			t.Fatalf("%d notifications, want 2 (failed requests notify nobody)", n)
		}
	})
}

func TestListPaginationAndSorting(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		a := client{s, s.Token(ann)}
		const n = 25
		ids := make([]string, n)
		for i := 0; i < n; i++ {
			// Titles in an order that differs from creation order.
			conv := a.send(t, "/system/v1/conversations", map[string]any{"to": fmt.Sprintf("user-%02d", i), "message": "m", "title": fmt.Sprintf("T%02d", (i*7)%n)})
			ids[i] = conv.ConversationID
		}
		page, r := a.list(t, "")
		if page.TotalDocs != n || page.Limit != 20 || page.Offset != 0 || len(page.Docs) != 20 || r.Header.Get("X-Total-Count") != "25" {
			t.Fatalf("first page: total %d limit %d offset %d docs %d", page.TotalDocs, page.Limit, page.Offset, len(page.Docs))
		}
		if page.Docs[0].ConversationID != ids[n-1] {
			t.Fatal("default order is not the latest activity first")
		}
		// Activity on the oldest conversation brings it to the top.
		a.send(t, "/system/v1/conversations/"+ids[0]+"/messages", map[string]any{"to": "user-00", "message": "again"})
		if page, _ := a.list(t, "?limit=1"); page.Docs[0].ConversationID != ids[0] {
			t.Fatal("the conversation with the latest message is not first")
		}
		rest, _ := a.list(t, "?offset=20")
		if len(rest.Docs) != 5 || rest.Offset != 20 {
			t.Fatalf("second page %d docs", len(rest.Docs))
		}
		empty, _ := a.list(t, "?offset=30")
		if len(empty.Docs) != 0 || empty.TotalDocs != n {
			t.Fatalf("beyond the end %+v", empty)
		}
		titles := func(q string) []string {
			p, _ := a.list(t, q)
			var out []string
			for _, d := range p.Docs {
				out = append(out, *d.Title)
			}
			return out
		}
		asc := titles("?sortBy=title&limit=100")
		if !sort.StringsAreSorted(asc) || len(asc) != n {
			t.Fatalf("title ascending %v", asc)
		}
		desc := titles("?sortBy=title&sortDesc=true&limit=5")
		if strings.Join(desc, ",") != "T24,T23,T22,T21,T20" {
			t.Fatalf("title descending %v", desc)
		}
		created, _ := a.list(t, "?sortBy=createdAtUTC&limit=3")
		if created.Docs[0].ConversationID != ids[0] || created.Docs[2].ConversationID != ids[2] {
			t.Fatal("createdAtUTC ascending is not creation order")
		}
		oldestActivity, _ := a.list(t, "?sortDesc=false&limit=1")
		if oldestActivity.Docs[0].ConversationID != ids[1] {
			t.Fatal("sortDesc=false without sortBy is not the oldest activity first")
		}
		// Pages do not overlap and cover everything.
		seen := map[string]bool{}
		for off := 0; off < n; off += 7 {
			p, _ := a.list(t, fmt.Sprintf("?sortBy=title&limit=7&offset=%d", off))
			for _, d := range p.Docs {
				if seen[d.ConversationID] {
					t.Fatalf("%s on two pages", d.ConversationID)
				}
				seen[d.ConversationID] = true
			}
		}
		if len(seen) != n {
			t.Fatalf("pages covered %d of %d", len(seen), n)
		}
		s.Run(t, []testkit.Scenario{
			{Name: "list400limit0", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/conversations?limit=0", Token: a.token}, Status: 400, Code: "validation_failed"},
			{Name: "list400limit101", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/conversations?limit=101", Token: a.token}, Status: 400, Code: "validation_failed"},
			{Name: "list400offsetNegative", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/conversations?offset=-1", Token: a.token}, Status: 400, Code: "validation_failed"},
			{Name: "list400sortBy", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/conversations?sortBy=password", Token: a.token}, Status: 400, Code: "bad_request"},
			{Name: "list400limitNotNumber", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/conversations?limit=ten", Token: a.token}, Status: 400, Code: "bad_request"},
		})
	})
}

// queryCounter counts the SQL statements bun runs on the conversation tables
// (the outbox dispatcher polls the same database in the background).
type queryCounter struct{ n atomic.Int64 }

func (q *queryCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}
func (q *queryCounter) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if strings.Contains(e.Query, "system_conversation") {
		q.n.Add(1)
	}
}

func TestListQueriesDoNotGrowWithThePage(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		a := client{s, s.Token(ann)}
		counter := &queryCounter{}
		db.AddQueryHook(counter) //nolint:staticcheck // the running server holds this *bun.DB: the hook must join it, not a copy
		queries := func(limit int) int64 {
			before := counter.n.Load()
			p, _ := a.list(t, fmt.Sprintf("?limit=%d", limit))
			if len(p.Docs) != limit {
				t.Fatalf("%d docs, want %d", len(p.Docs), limit)
			}
			return counter.n.Load() - before
		}
		for i := 0; i < 30; i++ {
			a.send(t, "/system/v1/conversations", map[string]any{"to": fmt.Sprintf("user-%d", i), "message": "one"})
		}
		small, large := queries(2), queries(30)
		if small != large {
			t.Fatalf("a page of 2 ran %d queries, a page of 30 ran %d: N+1", small, large)
		}
		t.Logf("list runs %d queries whatever the page size", large)
	})
}

func TestListCarriesTheLatestMessagesOnly(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		a := client{s, s.Token(ann)}
		conv := a.send(t, "/system/v1/conversations", map[string]any{"to": bob.UserID, "message": "m1"})
		total := messaging.ListMessages + 5
		for i := 2; i <= total; i++ {
			a.send(t, "/system/v1/conversations/"+conv.ConversationID+"/messages", map[string]any{"to": bob.UserID, "message": fmt.Sprintf("m%d", i)})
		}
		page, _ := a.list(t, "")
		msgs := page.Docs[0].Messages
		if len(msgs) != messaging.ListMessages || msgs[0].Message != "m6" || msgs[len(msgs)-1].Message != fmt.Sprintf("m%d", total) {
			t.Fatalf("list carries %d messages from %s", len(msgs), msgs[0].Message)
		}
		if got := a.conversation(t, conv.ConversationID); len(got.Messages) != total || got.Messages[0].Message != "m1" {
			t.Fatalf("get carries %d messages", len(got.Messages))
		}
	})
}

// FuzzNewDraft: whatever a client sends, validation answers without panicking,
// and an accepted draft keeps the rules.
func FuzzNewDraft(f *testing.F) {
	f.Add("user-bob", "hello", "L-1", "crop", "", "Hay")
	f.Add("user-ann", "", "", "sheep", "c", "\x00")
	f.Add(" ", strings.Repeat("é", 5001), "L\n", "", "", "")
	f.Fuzz(func(t *testing.T, to, msg, listingID, listingType, convID, title string) {
		d, err := messaging.NewDraft(messaging.MessageInput{To: to, Message: msg, ListingID: &listingID, ListingType: &listingType, ConversationID: &convID, Title: &title}, "user-ann")
		if err != nil {
			return
		}
		if d.To == "" || d.To == "user-ann" || strings.TrimSpace(d.Text) == "" || len([]rune(d.Text)) > messaging.MaxMessageLen || len([]rune(d.Title)) > messaging.MaxTitleLen {
			t.Fatalf("accepted %+v", d)
		}
		if (d.ListingID == "") != (d.ListingType == "") || (d.ListingType != "" && d.ListingType != "crop" && d.ListingType != "livestock") {
			t.Fatalf("accepted listing %q/%q", d.ListingID, d.ListingType)
		}
	})
}

// TestNotificationsReachTheWebhook runs the app's own dispatcher against a
// local receiver: a message arrives there signed, once, for the other participant.
func TestNotificationsReachTheWebhook(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		recv := outboxtest.NewReceiver(t, "hook-secret")
		s := testkit.NewServer(t, db, func(p *app.Platform) []module.Module {
			return []module.Module{system.New(p.Deps(system.Name))}
		}, testkit.Options{Configure: func(c *config.Config) {
			c.Notify.Webhook.URL, c.Notify.Webhook.Secret = recv.URL, "hook-secret"
			c.Notify.PollInterval = 20 * time.Millisecond
		}})
		a := client{s, s.Token(ann)}
		conv := a.send(t, "/system/v1/conversations", map[string]any{"to": bob.UserID, "message": "Load ready at 9", "title": "Barley"})
		got := recv.WaitAccepted(t, 1, 15*time.Second)
		if len(got) != 1 {
			t.Fatalf("accepted %v", got)
		}
		d := recv.Deliveries()[0]
		var n outbox.Notification
		if err := json.Unmarshal(d.Body, &n); err != nil {
			t.Fatal(err)
		}
		if !d.Verified || d.Type != messaging.EventMessage || strings.Join(n.Recipients, ",") != bob.UserID ||
			n.Body != "Load ready at 9" || n.Subject != "New message from Ann Smith: Barley" || !strings.Contains(string(n.Data), conv.ConversationID) {
			t.Fatalf("delivery %+v body %s", d, d.Body)
		}
	})
}

// TestNotificationLeavesOnCommit: with a dispatcher that polls only once a
// minute, a message's notification still reaches the webhook within moments
// of the 2xx, because the commit of the message wakes the dispatcher. Two
// writes: the first may meet the dispatcher's first pass at start-up, the
// second finds it asleep.
func TestNotificationLeavesOnCommit(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		recv := outboxtest.NewReceiver(t, "hook-secret")
		s := testkit.NewServer(t, db, func(p *app.Platform) []module.Module {
			return []module.Module{system.New(p.Deps(system.Name))}
		}, testkit.Options{Configure: func(c *config.Config) {
			c.Notify.Webhook.URL, c.Notify.Webhook.Secret = recv.URL, "hook-secret"
			c.Notify.PollInterval = time.Minute
		}})
		a := client{s, s.Token(ann)}
		for i := 1; i <= 2; i++ {
			a.send(t, "/system/v1/conversations", map[string]any{"to": bob.UserID, "message": fmt.Sprintf("message %d", i)})
			recv.WaitAccepted(t, i, 20*time.Second) // a third of the poll interval
		}
	})
}
