package main

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/idempotency"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// The Idempotency-Key middleware over the real modules: a repeat answers the
// first answer and writes nothing (no second row, outbox event, stream event
// or file), and duplicates sent at once to two replicas make one object.

func rows(t *testing.T, bdb *bun.DB, table string) int64 {
	t.Helper()
	n, err := bdb.NewSelect().Table(table).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// twice sends r with key twice and checks that the second answer is the
// first, replayed; it answers the first.
func twice(t *testing.T, s *testkit.Server, who auth.Principal, key string, r testkit.Request) *testkit.Response {
	t.Helper()
	r.Token = s.Token(who)
	r.Header = map[string]string{idempotency.Header: key}
	first := s.Do(r)
	if first.Status != http.StatusOK {
		t.Fatalf("%s %s: %d %s", r.Method, r.Path, first.Status, first.Body)
	}
	again := s.Do(r)
	if again.Status != first.Status || !bytes.Equal(again.Body, first.Body) || again.Header.Get(idempotency.ReplayedHeader) != "true" {
		t.Fatalf("repeat of %s %s: %d %v %s; first %s", r.Method, r.Path, again.Status, again.Header, again.Body, first.Body)
	}
	return first
}

func TestIdempotency_200_RepeatsWriteNothing(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		s := testkit.NewServer(t, bdb, func(p *app.Platform) []module.Module { return buildModules(p) })

		kind, listing := listingBody(t, 0, "Idempotent ewes")
		twice(t, s, demoFarmer, "listing-1", testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/listings/" + kind, JSON: listing})
		if n := rows(t, bdb, "livestock_listings"); n != 1 {
			t.Fatalf("%d listings, want 1", n)
		}

		var load struct{ ID string }
		twice(t, s, demoFarmer, "load-1", testkit.Request{Method: http.MethodPost, Path: "/logistics/v1/loads", JSON: loadBodyMap("IDEM-1", 3)}).Decode(t, &load)
		if n := rows(t, bdb, "logistics_loads"); n != 1 {
			t.Fatalf("%d loads, want 1", n)
		}
		outbox, events := rows(t, bdb, "platform_outbox"), rows(t, bdb, "platform_events")
		send := []any{map[string]any{"loadId": load.ID, "carrierId": "org-carrier", "carrierName": "Carrier Ltd"}}
		twice(t, s, demoFarmer, "send-1", testkit.Request{Method: http.MethodPost, Path: "/logistics/v1/loads/send-to-carrier", JSON: send})
		if o, e := rows(t, bdb, "platform_outbox"), rows(t, bdb, "platform_events"); o != outbox+1 || e != events+1 {
			t.Fatalf("outbox %d -> %d, events %d -> %d: want one more of each", outbox, o, events, e)
		}

		body, ct, _ := upload(t, demoFarmer, 7)
		twice(t, s, demoFarmer, "upload-1", testkit.Request{Method: http.MethodPost, Path: "/system/v1/files", Body: bytes.NewReader(body), ContentType: ct})
		if n := rows(t, bdb, "platform_files"); n != 1 {
			t.Fatalf("%d file records, want 1", n)
		}
		// The photo's thumbnails are made once at its upload; the replay adds nothing.
		if err := s.App.P.Files.WaitThumbnails(context.Background()); err != nil {
			t.Fatal(err)
		}
		var stored []string
		for _, f := range testkit.FilesUnder(t, filepath.Join(s.Config.DataDir, "files")) {
			if !strings.Contains(f, ".thumb-") {
				stored = append(stored, f)
			}
		}
		if len(stored) != 1 {
			t.Fatalf("files stored: %v, want one", stored)
		}
	})
}

func TestIdempotency_200_TwoReplicasMakeOneLoad(t *testing.T) {
	dsn := testkit.PostgresDSN(t)
	open := func() *bun.DB {
		bdb, err := db.Open(context.Background(), dsn, db.Options{MaxOpenConns: 10})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bdb.Close() })
		return bdb
	}
	first := open()
	replicas := []*testkit.Server{
		testkit.NewServer(t, first, func(p *app.Platform) []module.Module { return buildModules(p) }),
		testkit.NewServer(t, open(), func(p *app.Platform) []module.Module { return buildModules(p) }),
	}
	const n = 24
	answers := make([]*testkit.Response, n)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := replicas[i%2]
			answers[i] = s.Do(testkit.Request{Method: http.MethodPost, Path: "/logistics/v1/loads", Token: s.Token(demoFarmer),
				JSON: loadBodyMap("IDEM-TWO", 3), Header: map[string]string{idempotency.Header: "two-replicas"}})
		}()
	}
	wg.Wait()
	var created []byte
	count := map[int]int{}
	for _, a := range answers {
		count[a.Status]++
	}
	t.Logf("answers of %d duplicates over two replicas: %v", n, count)
	for i, a := range answers {
		switch a.Status {
		case http.StatusOK:
			if created != nil && !bytes.Equal(a.Body, created) {
				t.Fatalf("answer %d differs: %s vs %s", i, a.Body, created)
			}
			created = a.Body
		case http.StatusConflict:
			if a.Header.Get("Retry-After") != "1" {
				t.Fatalf("409 without Retry-After: %v", a.Header)
			}
		default:
			t.Fatalf("answer %d: %d %s", i, a.Status, a.Body)
		}
	}
	if got := rows(t, first, "logistics_loads"); got != 1 {
		t.Fatalf("%d loads from %d duplicates over two replicas, want 1", got, n)
	}
	for _, s := range replicas {
		// The first answer is kept within a batch window (about 10 ms) after
		// it was sent; meanwhile the other replica answers 409 Retry-After: 1,
		// and a client retries, as here.
		var r *testkit.Response
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			r = s.Do(testkit.Request{Method: http.MethodPost, Path: "/logistics/v1/loads", Token: s.Token(demoFarmer),
				JSON: loadBodyMap("IDEM-TWO", 3), Header: map[string]string{idempotency.Header: "two-replicas"}})
			if r.Status != http.StatusConflict || r.Header.Get("Retry-After") != "1" || time.Now().After(deadline) {
				break
			}
		}
		if r.Status != http.StatusOK || r.Header.Get(idempotency.ReplayedHeader) != "true" || (created != nil && !bytes.Equal(r.Body, created)) {
			t.Fatalf("retry on a replica: %d %s", r.Status, r.Body)
		}
	}
}
