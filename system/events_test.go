package system_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
	"github.com/uptrace/bun"
)

var (
	evAnn  = auth.Principal{UserID: "ev-ann", Name: "Ann", OrgID: "ev-farm", Orgs: []string{"ev-farm"}}
	evBob  = auth.Principal{UserID: "ev-bob", Name: "Bob", OrgID: "ev-buy", Orgs: []string{"ev-buy"}}
	evDave = auth.Principal{UserID: "ev-dave", Name: "Dave", OrgID: "ev-deal", Orgs: []string{"ev-deal"}}
	evCarl = auth.Principal{UserID: "ev-carl", Name: "Carl", OrgID: "ev-farm", Orgs: []string{"ev-farm"}}
)

// sseEvent is one event read from a stream.
type sseEvent struct {
	ID   int64
	Type string
	Data map[string]any
}

// sseClient reads a stream in the background.
type sseClient struct {
	res     *http.Response
	events  chan sseEvent
	comment chan string
	closed  chan struct{}
	cancel  context.CancelFunc
}

// openStream opens GET /system/v1/events on base with a token and optional
// Last-Event-ID, and answers the client once the headers are in.
// answer is the status and headers of a stream request.
type answer struct {
	StatusCode int
	Header     http.Header
}

func openStream(t *testing.T, base, token, lastID string) (*sseClient, answer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/system/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req) //nolint:bodyclose // closed by sseClient.Close (t.Cleanup) or below
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	head := answer{StatusCode: res.StatusCode, Header: res.Header}
	if res.StatusCode != http.StatusOK {
		cancel()
		_ = res.Body.Close()
		return nil, head
	}
	c := &sseClient{res: res, events: make(chan sseEvent, 100), comment: make(chan string, 100), closed: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(c.closed)
		sc := bufio.NewScanner(res.Body)
		var ev sseEvent
		var data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Type != "" {
					_ = json.Unmarshal([]byte(data), &ev.Data)
					c.events <- ev
				}
				ev, data = sseEvent{}, ""
			case strings.HasPrefix(line, ": "):
				select {
				case c.comment <- line[2:]:
				default:
				}
			case strings.HasPrefix(line, "id: "):
				ev.ID, _ = strconv.ParseInt(line[4:], 10, 64)
			case strings.HasPrefix(line, "event: "):
				ev.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				data = line[6:]
			}
		}
	}()
	t.Cleanup(func() { c.Close() })
	return c, head
}

func (c *sseClient) Close() {
	c.cancel()
	_ = c.res.Body.Close()
}

// next waits for the next event (failing after a generous bound: the test
// asserts arrival, not speed).
func (c *sseClient) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case ev := <-c.events:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		return sseEvent{}
	}
}

// ended waits for the stream to end.
func (c *sseClient) ended(t *testing.T) {
	t.Helper()
	select {
	case <-c.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end")
	}
}

func replica(t *testing.T, db *bun.DB, prefix string, tune func(c *config.Config)) (*testkit.Server, string) {
	s := testkit.NewServer(t, db, func(p *app.Platform) []module.Module {
		return []module.Module{system.New(p.Deps(system.Name))}
	}, testkit.Options{Configure: func(c *config.Config) {
		// Two replicas of one deployment: one database, one Redis bus.
		c.Bus.Backend = "redis"
		c.Redis.URL = testkit.RedisURL(t)
		c.Redis.Prefix = prefix
		c.Events.Heartbeat = 300 * time.Millisecond
		if tune != nil {
			tune(c)
		}
	}})
	hs := httptest.NewServer(s.App.Engine)
	t.Cleanup(hs.Close)
	return s, hs.URL
}

func sendMessage(t *testing.T, s *testkit.Server, from auth.Principal, to string) string {
	t.Helper()
	r := s.Do(testkit.Request{Method: http.MethodPost, Path: "/system/v1/conversations", Token: s.Token(from),
		JSON: map[string]any{"to": to, "message": "hello from " + from.Name}})
	if r.Status != http.StatusOK {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	return r.Map(t)["conversationId"].(string)
}

// TestEventStreamAcrossReplicas: a message sent on one replica reaches the
// recipient's stream on the other, and nobody else's; a reconnect with
// Last-Event-ID replays what was missed from the database on either replica.
func TestEventStreamAcrossReplicas(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		prefix := testkit.UniqueName("agritrade-events:") + ":"
		a, baseA := replica(t, db, prefix, nil)
		// B on a pool of its own: it hears of A's commits over the bus only.
		_, baseB := replica(t, testkit.SecondPool(t, db), prefix, nil)

		bob, _ := openStream(t, baseB, a.Token(evBob), "")
		dave, _ := openStream(t, baseB, a.Token(evDave), "")
		select {
		case <-bob.comment: // the stream is open and registered
		case <-time.After(5 * time.Second):
			t.Fatal("no opening comment")
		}
		<-dave.comment
		conv := sendMessage(t, a, evAnn, evBob.UserID)
		ev := bob.next(t)
		if ev.Type != "message.created" || ev.ID <= 0 || ev.Data["conversationId"] != conv {
			t.Fatalf("bob's event %+v", ev)
		}
		if m, _ := ev.Data["message"].(map[string]any); m["message"] != "hello from Ann" || m["sentById"] != evAnn.UserID {
			t.Fatalf("message of the event %+v", ev.Data)
		}
		// Dave was not in that conversation: his first event is his own message.
		own := sendMessage(t, a, evDave, evCarl.UserID)
		if ev := dave.next(t); ev.Data["conversationId"] != own {
			t.Fatalf("dave received another's event: %+v", ev)
		}
		// Heartbeats keep an idle stream alive.
		deadline := time.After(5 * time.Second)
	wait:
		for {
			select {
			case c := <-bob.comment:
				if c == "keep-alive" {
					break wait
				}
			case <-deadline:
				t.Fatal("no keep-alive comment")
			}
		}

		// Bob goes away; two messages come; he reconnects on the other replica.
		bob.Close()
		second := sendMessage(t, a, evCarl, evBob.UserID)
		third := sendMessage(t, a, evDave, evBob.UserID)
		again, _ := openStream(t, baseA, a.Token(evBob), strconv.FormatInt(ev.ID, 10))
		r1, r2 := again.next(t), again.next(t)
		if r1.Data["conversationId"] != second || r2.Data["conversationId"] != third || r1.ID <= ev.ID || r2.ID <= r1.ID {
			t.Fatalf("replay %+v %+v", r1, r2)
		}

		// A malformed Last-Event-ID answers 400 naming it.
		r := a.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/events", Token: a.Token(evBob), Header: map[string]string{"Last-Event-ID": "yesterday"}})
		if e := r.Error(t); r.Status != 400 || e.Code != "validation_failed" || strings.Join(e.Paths(), ",") != "Last-Event-ID" {
			t.Fatalf("malformed Last-Event-ID: %d %s", r.Status, r.Body)
		}
		// HEAD answers the stream's headers and does not hold the connection.
		if req, _ := http.NewRequest(http.MethodHead, baseA+"/system/v1/events", nil); req != nil {
			req.Header.Set("Authorization", "Bearer "+a.Token(evBob))
			res, err := http.DefaultClient.Do(req)
			if err != nil || res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("HEAD: %v %v", err, res)
			}
			_ = res.Body.Close()
		}
		if r := a.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/events"}); r.Status != 401 {
			t.Fatalf("no token: %d", r.Status)
		}

		// Expired events are purged and no longer replayed.
		if _, err := db.NewUpdate().Table("platform_events").Set("created_at = ?", time.Now().Add(-48*time.Hour).UTC()).
			Where("id <= ?", r1.ID).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n, err := a.Platform.Events.Purge(context.Background()); err != nil || n < 1 {
			t.Fatalf("purge: %d %v", n, err)
		}
		if n, _ := db.NewSelect().Table("platform_event_audiences").Where("event_id <= ?", r1.ID).Count(context.Background()); n != 0 {
			t.Fatalf("%d audiences of purged events remain", n)
		}
		late, _ := openStream(t, baseB, a.Token(evBob), "0")
		if ev := late.next(t); ev.ID != r2.ID {
			t.Fatalf("replay from 0 after the purge starts at %d, want %d", ev.ID, r2.ID)
		}
	})
}

// TestEventStreamBoundsExpiryAndShutdown: per-user and per-replica bounds
// answer 429 and 503 with Retry-After; a stream ends when its token expires
// and when the replica shuts down.
func TestEventStreamBoundsExpiryAndShutdown(t *testing.T) {
	db := testkit.DB(t, testkit.SQLite)
	a, base := replica(t, db, testkit.UniqueName("agritrade-events:")+":", func(c *config.Config) {
		c.Events.MaxPerUser = 2
		c.Events.MaxStreams = 3
	})
	tok := a.Token(evCarl)
	openStream(t, base, tok, "")
	openStream(t, base, tok, "")
	if _, res := openStream(t, base, tok, ""); res.StatusCode != 429 || res.Header.Get("Retry-After") == "" {
		t.Fatalf("third stream of one user: %d %v", res.StatusCode, res.Header)
	}
	short, _ := openStream(t, base, testkit.MintToken(t, evDave, 2*time.Second), "")
	if _, res := openStream(t, base, a.Token(evAnn), ""); res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
		t.Fatalf("stream over the replica's bound: %d", res.StatusCode)
	}
	// The token runs out: the stream says so and ends, freeing its place.
	for ev := short.next(t); ev.Type != "token-expired"; ev = short.next(t) {
	}
	short.ended(t)
	// The client sees the end a moment before the server has given the place
	// back: ask again (503 with Retry-After) until it has.
	ann, res := openStream(t, base, a.Token(evAnn), "")
	for deadline := time.Now().Add(10 * time.Second); ann == nil && res.StatusCode == 503 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		ann, res = openStream(t, base, a.Token(evAnn), "")
	}
	if ann == nil {
		t.Fatalf("after the expiry a place is free: %d", res.StatusCode)
	}
	// Shutdown ends every stream with a last event.
	a.Platform.Events.Close()
	for ev := ann.next(t); ev.Type != "shutdown"; ev = ann.next(t) {
	}
	ann.ended(t)
	if _, res := openStream(t, base, a.Token(evBob), ""); res.StatusCode != 503 {
		t.Fatalf("stream after shutdown began: %d", res.StatusCode)
	}
}
