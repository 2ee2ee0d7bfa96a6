package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	platformdb "github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/idempotency"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// probe is a module whose routes make the answers the middleware must tell
// apart: a create that writes a row, a slow one, a failing one, a large answer.
type probe struct {
	module.Base
	db      *bun.DB
	calls   atomic.Int64
	started chan struct{}
	release chan struct{}
}

func newProbe(db *bun.DB) *probe {
	return &probe{
		Base: module.Base{ModuleName: "probe", ModuleVersion: "1.0.0", Document: []byte("openapi: 3.0.3\ninfo: {title: probe, version: 1.0.0}\npaths: {}\n"),
			MigrationFS: fstest.MapFS{
				"0001_items.up.sql":   {Data: []byte("CREATE TABLE probe_items (id TEXT PRIMARY KEY, size INTEGER NOT NULL)")},
				"0001_items.down.sql": {Data: []byte("DROP TABLE probe_items")},
			}},
		db: db, started: make(chan struct{}, 8), release: make(chan struct{}),
	}
}

func (m *probe) Mount(r module.Routes) {
	g := r.API.Group("", auth.RequireAuth())
	create := func(c *gin.Context) error {
		m.calls.Add(1)
		body, err := io.ReadAll(c.Request.Body)
		if err != nil {
			return err
		}
		id := uuid.NewString()
		if _, err := m.db.NewRaw("INSERT INTO probe_items (id, size) VALUES (?, ?)", id, len(body)).Exec(c.Request.Context()); err != nil {
			return err
		}
		c.Header("Location", "/probe/v1/items/"+id)
		c.JSON(http.StatusCreated, gin.H{"status": "success", "id": id, "size": len(body)})
		return nil
	}
	g.POST("/items", httpx.H(create))
	// txitems writes in one transaction (db.InTx), so its route carries
	// idempotency.InTx: the key is claimed in that transaction. A body
	// {"invalid":true} fails before it (400), {"fail":true} rolls it back
	// (500), {"panic":true} panics after it.
	g.POST("/txitems", idempotency.InTx, httpx.H(func(c *gin.Context) error {
		m.calls.Add(1)
		var in struct{ Invalid, Fail, Panic bool }
		if err := c.ShouldBindJSON(&in); err != nil {
			return err
		}
		if in.Invalid {
			return httpxInvalid()
		}
		id := uuid.NewString()
		err := platformdb.InTx(c.Request.Context(), m.db, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.NewRaw("INSERT INTO probe_items (id, size) VALUES (?, ?)", id, 1).Exec(ctx); err != nil {
				return err
			}
			if in.Fail {
				return errors.New("boom after the insert")
			}
			return nil
		})
		if err != nil {
			return err
		}
		if in.Panic {
			panic("after the commit")
		}
		c.Header("Location", "/probe/v1/items/"+id)
		c.JSON(http.StatusCreated, gin.H{"status": "success", "id": id})
		return nil
	}))
	// txbig writes in a transaction and answers more than a key keeps.
	g.POST("/txbig", idempotency.InTx, httpx.H(func(c *gin.Context) error {
		m.calls.Add(1)
		err := platformdb.InTx(c.Request.Context(), m.db, func(ctx context.Context, tx bun.Tx) error {
			_, err := tx.NewRaw("INSERT INTO probe_items (id, size) VALUES (?, ?)", uuid.NewString(), 2<<20).Exec(ctx)
			return err
		})
		if err != nil {
			return err
		}
		c.Data(http.StatusOK, "application/octet-stream", bytes.Repeat([]byte("x"), 2<<20))
		return nil
	}))
	g.PUT("/items/:id", httpx.H(create))
	g.POST("/slow", httpx.H(func(c *gin.Context) error {
		m.started <- struct{}{}
		<-m.release
		return create(c)
	}))
	g.POST("/fail", httpx.H(func(c *gin.Context) error {
		m.calls.Add(1)
		return errors.New("boom")
	}))
	g.POST("/invalid", httpx.H(func(c *gin.Context) error {
		m.calls.Add(1)
		return httpxInvalid()
	}))
	g.POST("/big", httpx.H(func(c *gin.Context) error {
		m.calls.Add(1)
		c.Data(http.StatusOK, "application/octet-stream", bytes.Repeat([]byte("x"), 2<<20))
		return nil
	}))
}

func (m *probe) count(t *testing.T) int64 {
	t.Helper()
	n, err := m.db.NewSelect().Table("probe_items").Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

var (
	ann = auth.Principal{UserID: "ann", Name: "Ann", OrgID: "o1", Orgs: []string{"o1"}}
	bob = auth.Principal{UserID: "bob", Name: "Bob", OrgID: "o2", Orgs: []string{"o2"}}
)

func start(t *testing.T, db *bun.DB, configure func(*config.Config)) (*testkit.Server, *probe) {
	t.Helper()
	m := newProbe(db)
	s := testkit.NewServer(t, db, func(*app.Platform) []module.Module { return []module.Module{m} },
		testkit.Options{NoValidate: true, Configure: configure})
	return s, m
}

func post(s *testkit.Server, who auth.Principal, path, key string, body any) *testkit.Response {
	r := testkit.Request{Method: http.MethodPost, Path: path, Token: s.Token(who), JSON: body}
	if key != "" {
		r.Header = map[string]string{idempotency.Header: key}
	}
	return s.Do(r)
}

func keptRows(t *testing.T, db *bun.DB) int64 {
	t.Helper()
	n, err := db.NewSelect().Table("platform_idempotency").Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestIdempotency_200_RepeatIsReplayedAndChangesNothing(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, m := start(t, db, nil)
		body := map[string]any{"name": "ewes"}
		first := post(s, ann, "/probe/v1/items", "k-1", body)
		if first.Status != http.StatusCreated || first.Header.Get(idempotency.ReplayedHeader) != "" {
			t.Fatalf("first: %d %v %s", first.Status, first.Header, first.Body)
		}
		for i := 0; i < 2; i++ {
			again := post(s, ann, "/probe/v1/items", "k-1", body)
			if again.Status != first.Status || !bytes.Equal(again.Body, first.Body) {
				t.Fatalf("repeat: %d %s, want %d %s", again.Status, again.Body, first.Status, first.Body)
			}
			if again.Header.Get(idempotency.ReplayedHeader) != "true" {
				t.Fatalf("repeat without %s: %v", idempotency.ReplayedHeader, again.Header)
			}
			for _, h := range []string{"Content-Type", "Location", "X-API-Version"} {
				if again.Header.Get(h) != first.Header.Get(h) {
					t.Fatalf("%s %q, want %q", h, again.Header.Get(h), first.Header.Get(h))
				}
			}
			if again.Header.Get("X-Request-ID") == first.Header.Get("X-Request-ID") {
				t.Fatal("a replay repeats the first request's id")
			}
		}
		if n := m.count(t); n != 1 || m.calls.Load() != 1 {
			t.Fatalf("%d rows, %d calls after a request and two repeats; want 1, 1", n, m.calls.Load())
		}
		// The scope is (sub, method, path, key): another user, path or method runs.
		post(s, bob, "/probe/v1/items", "k-1", body)
		s.Do(testkit.Request{Method: http.MethodPut, Path: "/probe/v1/items/x", Token: s.Token(ann), JSON: body, Header: map[string]string{idempotency.Header: "k-1"}})
		post(s, ann, "/probe/v1/items", "k-2", body)
		// Without a key nothing is kept.
		post(s, ann, "/probe/v1/items", "", body)
		post(s, ann, "/probe/v1/items", "", body)
		// tus requests are left to their own protocol.
		for i := 0; i < 2; i++ {
			s.Do(testkit.Request{Method: http.MethodPost, Path: "/probe/v1/items", Token: s.Token(ann), JSON: body,
				Header: map[string]string{idempotency.Header: "k-tus", "Tus-Resumable": "1.0.0"}})
		}
		if n := m.count(t); n != 8 {
			t.Fatalf("%d rows, want 8", n)
		}
		if n := keptRows(t, db); n != 4 {
			t.Fatalf("%d kept answers, want 4", n)
		}
	})
}

func TestIdempotency_422_SameKeyOtherBody(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, m := start(t, db, nil)
		if r := post(s, ann, "/probe/v1/items", "k", map[string]any{"n": 1}); r.Status != http.StatusCreated {
			t.Fatalf("first: %d %s", r.Status, r.Body)
		}
		r := post(s, ann, "/probe/v1/items", "k", map[string]any{"n": 2})
		if r.Status != http.StatusUnprocessableEntity || r.Error(t).Code != "idempotency_key_reused" {
			t.Fatalf("other body: %d %s", r.Status, r.Body)
		}
		// Same bytes under another content type are another request too.
		r = s.Do(testkit.Request{Method: http.MethodPost, Path: "/probe/v1/items", Token: s.Token(ann), JSON: `{"n":1}`,
			ContentType: "text/plain", Header: map[string]string{idempotency.Header: "k"}})
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("other content type: %d %s", r.Status, r.Body)
		}
		if n := m.count(t); n != 1 {
			t.Fatalf("%d rows, want 1", n)
		}
	})
}

func TestIdempotency_409_WhileTheFirstRuns(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, m := start(t, db, nil)
		body := map[string]any{"n": 1}
		first := make(chan *testkit.Response, 1)
		go func() { first <- post(s, ann, "/probe/v1/slow", "k", body) }()
		<-m.started
		r := post(s, ann, "/probe/v1/slow", "k", body)
		if r.Status != http.StatusConflict || r.Error(t).Code != "conflict" || r.Header.Get("Retry-After") != "1" {
			t.Fatalf("while running: %d %v %s", r.Status, r.Header, r.Body)
		}
		// Another body while it runs is a reused key all the same.
		if r := post(s, ann, "/probe/v1/slow", "k", map[string]any{"n": 2}); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("other body while running: %d %s", r.Status, r.Body)
		}
		close(m.release)
		f := <-first
		if f.Status != http.StatusCreated {
			t.Fatalf("first: %d %s", f.Status, f.Body)
		}
		r = post(s, ann, "/probe/v1/slow", "k", body)
		if r.Status != http.StatusCreated || !bytes.Equal(r.Body, f.Body) || r.Header.Get(idempotency.ReplayedHeader) != "true" {
			t.Fatalf("after: %d %s", r.Status, r.Body)
		}
		if n := m.count(t); n != 1 {
			t.Fatalf("%d rows, want 1", n)
		}
	})
}

func TestIdempotency_500_NotKeptRetryRunsAgain(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, m := start(t, db, nil)
		for i := 0; i < 2; i++ {
			r := post(s, ann, "/probe/v1/fail", "k", map[string]any{})
			if r.Status != http.StatusInternalServerError || r.Header.Get(idempotency.ReplayedHeader) != "" {
				t.Fatalf("attempt %d: %d %s", i, r.Status, r.Body)
			}
		}
		if m.calls.Load() != 2 || keptRows(t, db) != 0 {
			t.Fatalf("%d calls, %d kept; want 2, 0", m.calls.Load(), keptRows(t, db))
		}
		// A 4xx answer is kept: the same request meets the same answer.
		a := post(s, ann, "/probe/v1/invalid", "k", map[string]any{})
		b := post(s, ann, "/probe/v1/invalid", "k", map[string]any{})
		if a.Status != http.StatusBadRequest || b.Status != a.Status || b.Header.Get(idempotency.ReplayedHeader) != "true" || m.calls.Load() != 3 {
			t.Fatalf("4xx: %d then %d (%v), %d calls", a.Status, b.Status, b.Header, m.calls.Load())
		}
	})
}

func TestIdempotency_200_LargeAnswerNotKept(t *testing.T) {
	s, m := start(t, testkit.DB(t, testkit.SQLite), nil)
	for i := 0; i < 2; i++ {
		if r := post(s, ann, "/probe/v1/big", "k", map[string]any{}); r.Status != http.StatusOK || len(r.Body) != 2<<20 {
			t.Fatalf("attempt %d: %d, %d bytes", i, r.Status, len(r.Body))
		}
	}
	if m.calls.Load() != 2 {
		t.Fatalf("%d calls, want 2 (an answer over 1 MiB is not kept)", m.calls.Load())
	}
}

func TestIdempotency_400_BadKey(t *testing.T) {
	s, m := start(t, testkit.DB(t, testkit.SQLite), nil)
	for name, key := range map[string]string{"empty": "", "long": strings.Repeat("k", 256), "control": "a\x01b", "non-ascii": "clé"} {
		t.Run(name, func(t *testing.T) {
			req := s.NewRequest(testkit.Request{Method: http.MethodPost, Path: "/probe/v1/items", Token: s.Token(ann), JSON: map[string]any{}})
			req.Header[idempotency.Header] = []string{key}
			r := serve(s, req)
			if r.Status != http.StatusBadRequest || r.Error(t).Code != "validation_failed" || fmt.Sprint(r.Error(t).Paths()) != "[Idempotency-Key]" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	t.Run("twice", func(t *testing.T) {
		req := s.NewRequest(testkit.Request{Method: http.MethodPost, Path: "/probe/v1/items", Token: s.Token(ann), JSON: map[string]any{}})
		req.Header[idempotency.Header] = []string{"a", "b"}
		if r := serve(s, req); r.Status != http.StatusBadRequest {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	if r := post(s, ann, "/probe/v1/items", strings.Repeat("k", 255), map[string]any{}); r.Status != http.StatusCreated {
		t.Fatalf("255 characters: %d %s", r.Status, r.Body)
	}
	if m.calls.Load() != 1 {
		t.Fatalf("%d calls, want 1", m.calls.Load())
	}
}

func serve(s *testkit.Server, req *http.Request) *testkit.Response {
	rec := newRecorder()
	s.App.Engine.ServeHTTP(rec, req)
	return &testkit.Response{Status: rec.Code, Header: rec.Result().Header, Body: rec.Body.Bytes()}
}

func TestIdempotency_200_ExpiredAnswersPurged(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, m := start(t, db, func(c *config.Config) {
			c.Idempotency.TTL = 200 * time.Millisecond
			c.Idempotency.PurgeInterval = 20 * time.Millisecond
		})
		post(s, ann, "/probe/v1/items", "k", map[string]any{})
		if keptRows(t, db) != 1 {
			t.Fatal("the answer was not kept")
		}
		for deadline := time.Now().Add(20 * time.Second); keptRows(t, db) != 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the expired answer was never purged")
			}
		}
		post(s, ann, "/probe/v1/items", "k", map[string]any{})
		if m.calls.Load() != 2 {
			t.Fatalf("%d calls, want 2 (the key is free after its ttl)", m.calls.Load())
		}
	})
}

func TestIdempotency_201_DeadReplicasKeyTakenOverAfterLease(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, m := start(t, db, func(c *config.Config) { c.Idempotency.Lease = time.Minute })
		body := []byte(`{"n":1}`)
		ctx := context.Background()
		// Started 30 s ago: within its lease, it still holds the key.
		if err := idempotency.HoldStale(ctx, s.Platform.Idempotency, ann.UserID, http.MethodPost, "/probe/v1/items", "live", "application/json", body, time.Now().Add(-30*time.Second)); err != nil {
			t.Fatal(err)
		}
		if r := post(s, ann, "/probe/v1/items", "live", body); r.Status != http.StatusConflict {
			t.Fatalf("within the lease: %d %s", r.Status, r.Body)
		}
		// Started 2 min ago and never renewed: its replica is gone.
		if err := idempotency.HoldStale(ctx, s.Platform.Idempotency, ann.UserID, http.MethodPost, "/probe/v1/items", "dead", "application/json", body, time.Now().Add(-2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if r := post(s, ann, "/probe/v1/items", "dead", body); r.Status != http.StatusCreated {
			t.Fatalf("after the lease: %d %s", r.Status, r.Body)
		}
		if r := post(s, ann, "/probe/v1/items", "dead", body); r.Header.Get(idempotency.ReplayedHeader) != "true" || m.calls.Load() != 1 {
			t.Fatalf("repeat after the takeover: %d %s, %d calls", r.Status, r.Body, m.calls.Load())
		}
	})
}

// multipartForm builds the same form with a boundary of the caller's.
func multipartForm(t *testing.T, boundary string, file []byte) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if err := w.SetBoundary(boundary); err != nil {
		t.Fatal(err)
	}
	_ = w.WriteField("name", "yard")
	fw, err := w.CreateFormFile("file", "yard.bin")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(file)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), b.Bytes()
}

func TestIdempotency_201_MultipartSpooledAndBoundaryIgnored(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, m := start(t, db, nil)
		file := bytes.Repeat([]byte("0123456789abcdef"), 40000) // 640 KB: spooled to a file
		send := func(boundary string, file []byte) *testkit.Response {
			ct, body := multipartForm(t, boundary, file)
			return s.Do(testkit.Request{Method: http.MethodPost, Path: "/probe/v1/items", Token: s.Token(ann), Body: bytes.NewReader(body), ContentType: ct,
				Header: map[string]string{idempotency.Header: "upload"}})
		}
		first := send("boundary-one-0123456789", file)
		if first.Status != http.StatusCreated || !strings.Contains(string(first.Body), `"size":640`) {
			t.Fatalf("first: %d %s", first.Status, first.Body)
		}
		again := send("boundary-two-9876543210", file)
		if again.Header.Get(idempotency.ReplayedHeader) != "true" || !bytes.Equal(again.Body, first.Body) {
			t.Fatalf("the same form with a new boundary: %d %s", again.Status, again.Body)
		}
		other := bytes.Clone(file)
		other[len(other)-1] = 'X'
		if r := send("boundary-one-0123456789", other); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("another file: %d %s", r.Status, r.Body)
		}
		if m.count(t) != 1 {
			t.Fatalf("%d rows, want 1", m.count(t))
		}
	})
}

func TestIdempotency_ConcurrentDuplicatesRunOnce(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, m := start(t, db, nil)
		var wg sync.WaitGroup
		statuses := make([]int, 16)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = post(s, ann, "/probe/v1/items", "together", map[string]any{"n": 1}).Status
			}()
		}
		wg.Wait()
		for _, st := range statuses {
			if st != http.StatusCreated && st != http.StatusConflict {
				t.Fatalf("statuses %v", statuses)
			}
		}
		if n := m.count(t); n != 1 {
			t.Fatalf("%d rows from 16 concurrent duplicates, want 1 (statuses %v)", n, statuses)
		}
	})
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func httpxInvalid() error {
	return apierr.Invalid(apierr.FieldError{Path: "name", Code: "required", Message: "is required", Data: map[string]any{}})
}

// TestIdempotency_503_OutageReleasesOrLeasesTheKey cuts the replica's
// PostgreSQL: a keyed request answers 503 and holds nothing; one whose handler
// lost the database half-way (the release could not be written either) holds
// its key until the lease passes, then a retry runs.
func TestIdempotency_503_OutageReleasesOrLeasesTheKey(t *testing.T) {
	dsn := testkit.PostgresDSN(t)
	bdb := testkit.PostgresAs(t, dsn, "idem-replica")
	s, m := start(t, bdb, func(c *config.Config) { c.Idempotency.Lease = 2 * time.Second })
	body := map[string]any{"n": 1}

	restore := testkit.CutPostgres(t, dsn, "idem-replica")
	r := post(s, ann, "/probe/v1/items", "cut", body)
	// PostgreSQL refuses new connections to the closed database (55000,
	// "not currently accepting connections"): an outage, 503.
	if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("while cut: %d %s", r.Status, r.Body)
	}
	restore()
	// The first request after the outage may still meet a dead pooled
	// connection (503, not kept); then the key runs.
	r = post(s, ann, "/probe/v1/items", "cut", body)
	for i := 0; r.Status >= 500 && i < 20; i++ {
		time.Sleep(100 * time.Millisecond)
		r = post(s, ann, "/probe/v1/items", "cut", body)
	}
	if r.Status != http.StatusCreated || r.Header.Get(idempotency.ReplayedHeader) != "" {
		t.Fatalf("after the outage: %d %s\n%s", r.Status, r.Body, s.Logs.String())
	}

	first := make(chan *testkit.Response, 1)
	go func() { first <- post(s, ann, "/probe/v1/slow", "halfway", body) }()
	<-m.started
	restore = testkit.CutPostgres(t, dsn, "idem-replica")
	close(m.release)
	if r := <-first; r.Status < 500 {
		t.Fatalf("handler cut half-way: %d %s", r.Status, r.Body)
	}
	restore()
	cutAt := time.Now()
	r = post(s, ann, "/probe/v1/slow", "halfway", body)
	if time.Since(cutAt) < 2*time.Second && r.Status != http.StatusConflict && r.Status < 500 {
		t.Fatalf("within the lease: %d %s", r.Status, r.Body)
	}
	for deadline := time.Now().Add(30 * time.Second); r.Status == http.StatusConflict || r.Status >= 500; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the key of the request cut half-way was never freed")
		}
		r = post(s, ann, "/probe/v1/slow", "halfway", body)
	}
	if r.Status != http.StatusCreated {
		t.Fatalf("after the lease: %d %s", r.Status, r.Body)
	}
}

// TestIdempotency_201_InTxKeyCommitsWithTheChange: on a route marked InTx the
// key's row is written in the change's own transaction; the replay, 422 and
// kept-4xx rules are those of every route.
func TestIdempotency_201_InTxKeyCommitsWithTheChange(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, m := start(t, db, nil)
		first := post(s, ann, "/probe/v1/txitems", "tx-1", map[string]any{})
		if first.Status != http.StatusCreated || first.Header.Get(idempotency.ReplayedHeader) != "" {
			t.Fatalf("first: %d %s", first.Status, first.Body)
		}
		again := post(s, ann, "/probe/v1/txitems", "tx-1", map[string]any{})
		if again.Status != http.StatusCreated || !bytes.Equal(again.Body, first.Body) || again.Header.Get(idempotency.ReplayedHeader) != "true" ||
			again.Header.Get("Location") != first.Header.Get("Location") {
			t.Fatalf("repeat: %d %v %s", again.Status, again.Header, again.Body)
		}
		if r := post(s, ann, "/probe/v1/txitems", "tx-1", map[string]any{"invalid": false}); r.Status != http.StatusUnprocessableEntity ||
			r.Error(t).Code != "idempotency_key_reused" {
			t.Fatalf("other body: %d %s", r.Status, r.Body)
		}
		// A 4xx before any transaction is kept as well.
		a := post(s, ann, "/probe/v1/txitems", "tx-2", map[string]any{"invalid": true})
		b := post(s, ann, "/probe/v1/txitems", "tx-2", map[string]any{"invalid": true})
		if a.Status != http.StatusBadRequest || b.Status != a.Status || !bytes.Equal(a.Body, b.Body) || b.Header.Get(idempotency.ReplayedHeader) != "true" {
			t.Fatalf("4xx: %d then %d (%v)", a.Status, b.Status, b.Header)
		}
		// The repeat and the 422 ran up to the key's insert, met the row and
		// rolled back; the repeated 4xx ran (no transaction, nothing written)
		// and was replaced by the kept answer.
		if n := m.count(t); n != 1 || m.calls.Load() != 5 || keptRows(t, db) != 2 {
			t.Fatalf("%d rows, %d calls, %d kept; want 1, 5, 2", n, m.calls.Load(), keptRows(t, db))
		}
		// The answer of the change committed with it.
		if done, err := db.NewSelect().Table("platform_idempotency").Where("state = 'done' AND status = ?", first.Status).Count(context.Background()); err != nil || done != 1 {
			t.Fatalf("%d rows with the answer of the change (%v), want 1", done, err)
		}
	})
}

// TestIdempotency_201_InTxRepeatOnAnotherReplicaMeetsTheRow: a repeat that
// reaches a replica without the answer in memory runs up to its claim, meets
// the written row there and answers what it says, writing nothing.
func TestIdempotency_201_InTxRepeatOnAnotherReplicaMeetsTheRow(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, m := start(t, db, nil)
		first := post(s, ann, "/probe/v1/txitems", "tx-r", map[string]any{})
		if first.Status != http.StatusCreated {
			t.Fatalf("first: %d %s", first.Status, first.Body)
		}
		other, _ := start(t, db, nil) // a second replica on the same database
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			r := post(other, ann, "/probe/v1/txitems", "tx-r", map[string]any{})
			if r.Status == http.StatusConflict && r.Header.Get("Retry-After") == "1" && time.Now().Before(deadline) {
				continue // the answer is not written yet
			}
			if r.Status != http.StatusCreated || !bytes.Equal(r.Body, first.Body) || r.Header.Get(idempotency.ReplayedHeader) != "true" ||
				r.Header.Get("Location") != first.Header.Get("Location") {
				t.Fatalf("repeat on the other replica: %d %v %s", r.Status, r.Header, r.Body)
			}
			break
		}
		if r := post(other, ann, "/probe/v1/txitems", "tx-r", map[string]any{"invalid": false}); r.Status != http.StatusUnprocessableEntity ||
			r.Error(t).Code != "idempotency_key_reused" {
			t.Fatalf("other body on the other replica: %d %s", r.Status, r.Body)
		}
		if n, kept := m.count(t), keptRows(t, db); n != 1 || kept != 1 {
			t.Fatalf("%d rows, %d kept; want 1, 1", n, kept)
		}
	})
}

// TestIdempotency_201_InTxExpiredKeyRunsAgain: a row past its ttl that the
// purge has not removed yet is replaced by the claim: the key is free again.
func TestIdempotency_201_InTxExpiredKeyRunsAgain(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, m := start(t, db, func(c *config.Config) {
			c.Idempotency.TTL = 300 * time.Millisecond
			c.Idempotency.PurgeInterval = time.Hour
		})
		first := post(s, ann, "/probe/v1/txitems", "tx-old", map[string]any{})
		time.Sleep(400 * time.Millisecond)
		again := post(s, ann, "/probe/v1/txitems", "tx-old", map[string]any{})
		if first.Status != http.StatusCreated || again.Status != http.StatusCreated || again.Header.Get(idempotency.ReplayedHeader) != "" ||
			bytes.Equal(again.Body, first.Body) {
			t.Fatalf("first %d %s, again %d %v %s", first.Status, first.Body, again.Status, again.Header, again.Body)
		}
		if n, kept := m.count(t), keptRows(t, db); n != 2 || kept != 1 {
			t.Fatalf("%d rows, %d kept; want 2, 1", n, kept)
		}
	})
}

// TestIdempotency_500_InTxRollbackKeepsNoKey: the change rolls back, and the
// key's row with it; a retry runs again.
func TestIdempotency_500_InTxRollbackKeepsNoKey(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, m := start(t, db, nil)
		for i := 0; i < 2; i++ {
			if r := post(s, ann, "/probe/v1/txitems", "tx-fail", map[string]any{"fail": true}); r.Status != http.StatusInternalServerError {
				t.Fatalf("attempt %d: %d %s", i, r.Status, r.Body)
			}
			if n, kept := m.count(t), keptRows(t, db); n != 0 || kept != 0 {
				t.Fatalf("after attempt %d: %d rows, %d kept; want 0, 0", i, n, kept)
			}
		}
		if m.calls.Load() != 2 {
			t.Fatalf("%d calls, want 2", m.calls.Load())
		}
	})
}

// TestIdempotency_500_InTxPanicRollsTheChangeBack: a handler that panics
// after its transaction's function returned leaves nothing: the change
// waited for the answer, and the retry runs again.
func TestIdempotency_500_InTxPanicRollsTheChangeBack(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, m := start(t, db, nil)
		for i := 0; i < 2; i++ {
			if r := post(s, ann, "/probe/v1/txitems", "tx-panic", map[string]any{"panic": true}); r.Status != http.StatusInternalServerError {
				t.Fatalf("attempt %d: %d %s", i, r.Status, r.Body)
			}
			if n, kept := m.count(t), keptRows(t, db); n != 0 || kept != 0 {
				t.Fatalf("after attempt %d: %d rows, %d kept; want 0, 0", i, n, kept)
			}
		}
		// The write gate and the connection were given back: a write goes through.
		if r := post(s, ann, "/probe/v1/txitems", "tx-after", map[string]any{}); r.Status != http.StatusCreated || m.count(t) != 1 {
			t.Fatalf("after the panics: %d %s, %d rows", r.Status, r.Body, m.count(t))
		}
	})
}

// TestIdempotency_409_InTxAnswerTooLargeNeverRunsAgain: an answer too large
// to keep goes out after its change committed, with a row without an
// answer; a retry answers 409 without Retry-After and never runs the change
// again.
func TestIdempotency_409_InTxAnswerTooLargeNeverRunsAgain(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, m := start(t, db, nil)
		first := post(s, ann, "/probe/v1/txbig", "tx-big", map[string]any{})
		if first.Status != http.StatusOK || len(first.Body) != 2<<20 || m.count(t) != 1 {
			t.Fatalf("first: %d, %d bytes, %d rows", first.Status, len(first.Body), m.count(t))
		}
		r := post(s, ann, "/probe/v1/txbig", "tx-big", map[string]any{})
		if r.Status != http.StatusConflict || r.Header.Get("Retry-After") != "" || !strings.Contains(r.Error(t).Message, "answer was lost") {
			t.Fatalf("retry: %d %v %s", r.Status, r.Header, r.Body)
		}
		if n := m.count(t); n != 1 {
			t.Fatalf("%d rows; want 1 (the change is not made again)", n)
		}
	})
}

// TestIdempotency_InTxConcurrentDuplicatesRunOnce: duplicates that all pass
// the first look (no row yet) meet at the claim in their transactions.
func TestIdempotency_InTxConcurrentDuplicatesRunOnce(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, m := start(t, db, nil)
		var wg sync.WaitGroup
		statuses := make([]int, 16)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = post(s, ann, "/probe/v1/txitems", "tx-together", map[string]any{}).Status
			}()
		}
		wg.Wait()
		created := 0
		for _, st := range statuses {
			switch st {
			case http.StatusCreated:
				created++
			case http.StatusConflict:
			default:
				t.Fatalf("statuses %v", statuses)
			}
		}
		if n := m.count(t); n != 1 || created < 1 {
			t.Fatalf("%d rows from 16 concurrent duplicates, want 1 (statuses %v)", n, statuses)
		}
	})
}
