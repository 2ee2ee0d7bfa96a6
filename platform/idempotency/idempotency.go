// Package idempotency makes authenticated writes safe to retry: a POST, PUT,
// PATCH or DELETE sent with an Idempotency-Key runs once per (token sub,
// method, path, key), and a repeat answers what the first answered, from the
// database, on any replica (API.md "Safe retries: Idempotency-Key").
//
// One engine middleware does it for every module, right after the token is
// read: the body is read to its end and hashed first (spooled to a temporary
// file past 64 KiB, so uploads are not held in memory), then the key's row is
// inserted "running" (a primary key on the scope makes concurrent duplicates
// meet in the database, whichever replica they reach), the handler runs, and
// its answer is kept or the row released.
//
// What is kept: every answer below 500 but 401, 408 and 429. A 5xx, and 503
// above all, says the server could not do the work now, and 408 and 429 that
// it did not try: each is about the moment, not the request, so the key is
// released and a retry runs again (the contract says so of 5xx; 408 and 429
// ask for a retry in so many words). A 401 cannot come from a request that
// carried a valid token, which a kept answer needs, so it is not kept either.
// Other 4xx are kept (the contract keeps the status): the same body meets the
// same validation, the same 404 or 409 again, and a client that changed the
// request must use a new key.
//
// An answer that is streamed (flushed) or larger than maxKept is not kept
// either: a replay could not repeat it, so the key is released and a retry
// runs again (no write operation of the API answers that way today; it is
// counted in agritrade_idempotency_requests_total{outcome="not_kept"}).
//
// Routes whose writes all go through platform/db.InTx carry the marker InTx,
// and their key is claimed differently: a prepared read first (a kept answer
// is replayed, a 422 or 409 answered, as above), then the handler runs with a
// db.Claim in its context, and the first transaction it opens inserts the
// key's row "committed" at its start. The row so costs no commit of its own,
// and it is kept exactly when the change is: a transaction that rolls back
// takes it along (the retry runs again), and concurrent duplicates meet at
// that insert (the primary key; on PostgreSQL the second waits for the first
// to commit) and answer 409 or 422, rolling back. Only the answer is written
// after the commit, and not by the request: it waits in memory (replayed from
// there on this replica) and one transaction writes the answers of all the
// requests of the last flushDelay (10 ms), where each had a commit of its own
// (a commit, and the rewrite of the row's page, was a third of the key's
// cost). Meanwhile another replica answers a repeat 409 with Retry-After: 1.
// A retry that finds a "committed" row without an answer
// answers 409 with Retry-After: 1 while the lease since the claim runs (the
// answer is being kept), and 409 without Retry-After after it: the replica
// died between the commit and keeping the answer (or the answer, a 5xx or a
// stream, could not be kept), and the change, made, is never made again. The
// client looks up the result instead. A request that committed nothing keeps
// its answer (a 4xx) in one insert.
//
// The limit of the scheme on routes without InTx: the row and the handler's
// change are written in separate transactions. If a replica dies after the
// change committed and before the answer is kept, a retry after the lease runs
// the request again.
package idempotency

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/db"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
)

// Header is the request header; ReplayedHeader marks a kept answer sent again.
const (
	Header         = "Idempotency-Key"
	ReplayedHeader = "Idempotent-Replayed"
)

// maxKey is the longest key (API.md: 1-255 printable ASCII).
const maxKey = 255

// maxKept is the largest answer body kept for replay.
const maxKept = 1 << 20

// keptHeaders are the answer's headers that a replay repeats: those the
// contract names, and the module's version.
var keptHeaders = []string{"Content-Type", "Location", "X-Total-Count", "X-API-Version"}

// Options configure a Keeper.
type Options struct {
	TTL   time.Duration
	Lease time.Duration
	// PurgeInterval is the period of Run's purge.
	PurgeInterval time.Duration
	// MaxBody bounds the bodies spooled: the largest any route accepts. A
	// larger body is handed on unhashed, and its route refuses it (413).
	MaxBody int64
	// TempDir holds the spooled bodies; "" is the system's.
	TempDir string
	Log     logrus.FieldLogger
}

// Keeper keeps the answers of writes sent with a key.
type Keeper struct {
	db  *bun.DB
	o   Options
	now func() time.Time

	mu                                          sync.Mutex
	insertStmt, finishStmt, claimStmt, heldStmt *sql.Stmt
	// routes: method and route path -> whether the route carries InTx.
	routes sync.Map

	// The answers of InTx requests waiting to be written (scope -> answer),
	// and whether a flush is due.
	amu     sync.Mutex
	waits   map[string]*record
	flushAt *time.Timer
}

// Answers of InTx requests are written together: flushDelay after the first
// waits, or at once when flushMax wait.
const (
	flushDelay = 10 * time.Millisecond
	flushMax   = 128
)

// New returns a keeper over the platform database.
func New(db *bun.DB, o Options) *Keeper {
	if o.TTL <= 0 {
		o.TTL = 24 * time.Hour
	}
	if o.Lease <= 0 {
		o.Lease = time.Minute
	}
	if o.PurgeInterval <= 0 {
		o.PurgeInterval = 10 * time.Minute
	}
	if o.Log == nil {
		o.Log = logrus.StandardLogger()
	}
	return &Keeper{db: db, o: o, now: func() time.Time { return time.Now().UTC() }}
}

// Run purges the expired answers at start and every PurgeInterval until ctx ends.
func (k *Keeper) Run(ctx context.Context) error {
	t := time.NewTicker(k.o.PurgeInterval)
	defer t.Stop()
	for {
		if n, err := k.Purge(ctx); err != nil && ctx.Err() == nil {
			k.o.Log.WithError(err).Warn("idempotency: purge failed")
		} else if n > 0 {
			k.o.Log.WithField("keys", n).Debug("idempotency: expired answers purged")
		}
		if n := sweepSpools(k.o.TempDir, k.now().Add(-spoolMaxAge)); n > 0 {
			k.o.Log.WithField("files", n).Info("idempotency: spooled bodies left by a process that died removed")
		}
		select {
		case <-ctx.Done():
			k.flush() // the answers still waiting, before the process ends
			return nil
		case <-t.C:
		}
	}
}

// isWrite tells whether the method is one the contract covers.
func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// Middleware applies keys. It must follow the token middleware (the scope is
// the token's sub); writes without a key, anonymous calls and paths without
// a route pass through untouched, at the cost of one header lookup.
func (k *Keeper) Middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		values, sent := c.Request.Header[Header]
		if !sent || !isWrite(c.Request.Method) {
			c.Next()
			return
		}
		p := auth.FromContext(c)
		if p == nil || c.FullPath() == "" || resumable(c.Request) {
			c.Next()
			return
		}
		if err := checkKey(values); err != nil {
			apierr.Render(c, err)
			return
		}
		k.serve(c, p.UserID, values[0])
	}
}

// resumable tells a tus request (resumable uploads), which the key leaves
// alone: the contract's writes are JSON or multipart, and tus makes its own
// requests safe to repeat (a PATCH states the offset it writes at; HEAD says
// where the upload stands), with headers a kept answer would not repeat.
func resumable(r *http.Request) bool {
	_, ok := r.Header["Tus-Resumable"]
	return ok
}

// checkKey answers the validation error of a bad key header.
func checkKey(values []string) error {
	invalid := func(code, msg string, data map[string]any) error {
		if data == nil {
			data = map[string]any{}
		}
		return apierr.Invalid(apierr.FieldError{Path: Header, Code: code, Message: msg, Data: data})
	}
	if len(values) != 1 {
		return invalid("invalid", "must be sent once", nil)
	}
	key := values[0]
	switch {
	case key == "":
		return invalid("required", "is required (1-255 printable ASCII characters)", nil)
	case len(key) > maxKey:
		return invalid("max_length", "must be at most 255 characters", map[string]any{"max": maxKey, "actual": len(key)})
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return invalid("invalid", "must be printable ASCII (0x20-0x7E)", nil)
		}
	}
	return nil
}

func (k *Keeper) serve(c *gin.Context, sub, key string) {
	ctx := c.Request.Context()
	s, pass, err := readSpool(c.Request.Body, c.GetHeader("Content-Type"), c.Request.ContentLength, k.o.MaxBody, k.o.TempDir)
	if s != nil {
		defer s.close()
	}
	switch {
	case pass != nil:
		// The body could not be read whole: the route answers as it would
		// without a key (413, 400), and nothing is kept.
		c.Request.Body = io.NopCloser(pass)
		counted.notKept.Inc()
		c.Next()
		return
	case err != nil:
		apierr.Render(c, apierr.Unavailable(err, "temporary space for the request body"))
		return
	}
	c.Request.Body = io.NopCloser(s.reader())
	hash := hex.EncodeToString(s.sum[:])
	scope := scopeOf(sub, c.Request.Method, c.Request.URL.Path, key)
	held := false
	if k.claimsInTx(c) {
		if a := k.waiting(scope); a != nil {
			// Its answer is not written yet: this replica has it.
			if a.RequestHash != hash {
				counted.reused.Inc()
				apierr.Render(c, errReused())
				return
			}
			counted.replayed.Inc()
			k.replay(c, a)
			return
		}
		if held, err = k.held(ctx, scope); err != nil {
			apierr.Render(c, err)
			return
		}
		if !held {
			k.runInTx(c, scope, hash)
			return
		}
	}
	owner := newOwner()
	for attempt := 0; ; attempt++ {
		now := k.now()
		if !held || attempt > 0 {
			ok, err := k.insert(ctx, scope, hash, owner, now)
			if err != nil {
				apierr.Render(c, err) // the database's failures answer 503
				return
			}
			if ok {
				break
			}
		}
		r, err := k.get(ctx, scope)
		if err != nil {
			apierr.Render(c, err)
			return
		}
		if r == nil && attempt < 3 {
			continue // purged or released meanwhile: insert again
		}
		if r != nil && r.claimable(now) {
			took, err := k.takeOver(ctx, scope, hash, owner, now)
			if err != nil {
				apierr.Render(c, err)
				return
			}
			if took {
				break
			}
			if attempt < 3 {
				continue
			}
		}
		if r == nil || r.claimable(now) {
			// Lost every race for a row that kept changing hands.
			in := apierr.Conflict("a request with this Idempotency-Key is being handled; retry")
			in.RetryAfter = 1
			apierr.Render(c, in)
			return
		}
		switch {
		case r.RequestHash != hash:
			counted.reused.Inc()
			apierr.Render(c, errReused())
		case r.State == stateRunning, r.State == stateCommitted && !now.After(r.LeaseUntil):
			counted.inFlight.Inc()
			apierr.Render(c, inFlight())
		case r.State == stateCommitted:
			counted.lost.Inc()
			apierr.Render(c, answerLost())
		default:
			counted.replayed.Inc()
			k.replay(c, r)
		}
		return
	}
	k.run(c, scope, owner)
}

// run serves the request that holds the key and keeps or releases its answer.
func (k *Keeper) run(c *gin.Context, scope, owner string) {
	// The answer is kept or released whatever becomes of the client's
	// connection; a few seconds bound it when the database hangs.
	done := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(c.Request.Context()), 10*time.Second)
	}
	stop := k.keepAlive(scope, owner)
	rec := &recorder{ResponseWriter: c.Writer}
	c.Writer = rec
	finished := false
	defer func() {
		stop()
		c.Writer = rec.ResponseWriter
		if !finished {
			// A panic: the error middleware answers 500, which is not kept.
			ctx, cancel := done()
			defer cancel()
			if err := k.release(ctx, scope, owner); err != nil {
				k.o.Log.WithError(err).Warn("idempotency: releasing the key after a panic failed")
			}
		}
	}()
	c.Next()
	apierr.RenderPending(c)
	finished = true
	status := rec.Status()
	ctx, cancel := done()
	defer cancel()
	if !kept(status) || rec.streamed || rec.overflow {
		counted.notKept.Inc()
		if err := k.release(ctx, scope, owner); err != nil {
			// The row stays running until its lease passes; retries meanwhile answer 409.
			k.o.Log.WithError(err).Warn("idempotency: releasing the key failed")
		}
		return
	}
	counted.kept.Inc()
	h := keptHeader(rec)
	if err := k.finish(ctx, scope, owner, status, h, rec.body); err != nil {
		// The change is made; a retry after the lease would make it again.
		k.o.Log.WithError(err).Error("idempotency: keeping the answer failed")
	}
}

// runInTx serves a request of a route marked InTx whose key no row holds:
// the handler runs at once, and the first transaction it opens claims the
// key (claim) and commits it with the change. Only its answer is written
// after, in a statement of its own.
func (k *Keeper) runInTx(c *gin.Context, scope, hash string) {
	st, err := k.prepared(c.Request.Context(), &k.claimStmt, claimQuery)
	if err != nil {
		apierr.Render(c, err)
		return
	}
	owner := newOwner()
	ctx, cl := db.WithClaim(c.Request.Context(), func(ctx context.Context, tx bun.Tx) error {
		return k.claim(ctx, tx, st, scope, hash, owner)
	})
	c.Request = c.Request.WithContext(ctx)
	rec := &recorder{ResponseWriter: c.Writer}
	c.Writer = rec
	// A panic leaves nothing to undo: before the claim commits there is no
	// row, after it the change is made and the row stays without an answer.
	defer func() { c.Writer = rec.ResponseWriter }()
	c.Next()
	apierr.RenderPending(c)
	status := rec.Status()
	keep := kept(status) && !rec.streamed && !rec.overflow
	if !keep {
		counted.notKept.Inc()
		if cl.Committed() {
			// The change is made: running it again would make it twice, so
			// the row stays, and a retry answers 409 (answerLost).
			k.o.Log.WithField("status", status).Warn("idempotency: the change of a keyed request committed but its answer cannot be kept")
		}
		return
	}
	counted.kept.Inc()
	h := keptHeader(rec)
	if cl.Committed() {
		k.queue(scope, owner, hash, status, h, rec.body)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	// Nothing was written (a 4xx, or a route that changed nothing): the
	// answer is kept as it stands, unless a duplicate's change came first.
	if err := k.keep(ctx, scope, hash, status, h, rec.body); err != nil {
		k.o.Log.WithError(err).Warn("idempotency: keeping the answer failed")
	}
}

// keptHeader is the part of the answer's header a replay repeats.
func keptHeader(rec *recorder) http.Header {
	h := http.Header{}
	for _, name := range keptHeaders {
		if v := rec.Header().Values(name); len(v) > 0 {
			h[http.CanonicalHeaderKey(name)] = v
		}
	}
	return h
}

// errReused is the 422 of a key sent again with another request.
func errReused() error {
	return apierr.New(apierr.CodeIdempotencyKeyReused,
		"this Idempotency-Key was used with another request; use a new key for a new request")
}

// inFlight is the 409 of a key whose request has not finished.
func inFlight() error {
	in := apierr.Conflict("a request with this Idempotency-Key is still running; retry after Retry-After")
	in.RetryAfter = 1
	return in
}

// answerLost is the 409 of a key whose change committed and whose answer was
// never kept (its replica died in between, or the answer could not be kept):
// running the request again would make the change twice, so it does not run,
// and no Retry-After invites a retry that would answer the same.
func answerLost() error {
	return apierr.Conflict("the request with this Idempotency-Key was carried out, but its answer was lost; " +
		"look its result up instead of sending it again")
}

// kept tells whether an answer of this status is kept (see the package doc).
func kept(status int) bool {
	switch {
	case status >= http.StatusInternalServerError:
		return false
	case status == http.StatusUnauthorized, status == http.StatusRequestTimeout, status == http.StatusTooManyRequests:
		return false
	}
	return true
}

// replay answers the kept answer.
func (k *Keeper) replay(c *gin.Context, r *record) {
	var h http.Header
	if err := json.Unmarshal([]byte(r.Header), &h); err != nil {
		apierr.Render(c, apierr.Internal(err))
		return
	}
	out := c.Writer.Header()
	for name, v := range h {
		out[http.CanonicalHeaderKey(name)] = v
	}
	out.Set(ReplayedHeader, "true")
	c.Writer.WriteHeader(r.Status)
	_, _ = c.Writer.Write(r.Body)
	c.Abort()
}

// keepAlive renews the lease every third of it while the request runs, so a
// long request keeps its key and a dead replica's key frees itself. No
// goroutine waits for requests shorter than that (nearly all).
func (k *Keeper) keepAlive(scope, owner string) (stop func()) {
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	every := k.o.Lease / 3
	tick := func() {
		ctx, cancel := context.WithTimeout(context.Background(), every)
		err := k.renew(ctx, scope, owner)
		cancel()
		if err != nil {
			k.o.Log.WithError(err).Warn("idempotency: renewing the lease failed")
		}
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			t.Reset(every)
		}
	}
	mu.Lock()
	t = time.AfterFunc(every, tick)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// scopeOf is the row key: a digest of what the contract scopes a key by.
func scopeOf(sub, method, path, key string) string {
	b := make([]byte, 0, len(sub)+len(method)+len(path)+len(key)+4)
	for _, s := range []string{sub, method, path, key} {
		b = append(append(b, s...), 0)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// newOwner names one run of a request: only it may keep or release the row.
// A random prefix drawn once per process (replicas differ) and a counter
// make it unique without drawing random bytes per request.
func newOwner() string {
	return ownerPrefix + strconv.FormatUint(owners.Add(1), 36)
}

var (
	ownerPrefix = func() string {
		b := make([]byte, 9)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b) + "-"
	}()
	owners atomic.Uint64
)

// InTx marks a route whose writes all happen in transactions opened with
// platform/db.InTx on the request's context, one after another: put it in
// the route's chain before the handler (g.POST(path, idempotency.InTx,
// httpx.H(h.create))). The key of such a route is claimed inside the first
// of those transactions and committed with the change: no commit of its own,
// and a change is never made twice, even when the replica dies before
// keeping its answer. A route that writes outside InTx (or through a context
// not derived from the request's) must not carry it: its key is claimed
// before the handler runs.
func InTx(*gin.Context) {}

// inTxName is InTx's name as gin lists the handlers of a route.
var inTxName = runtime.FuncForPC(reflect.ValueOf(InTx).Pointer()).Name()

// claimsInTx tells whether the request's route carries InTx; each route's
// chain is looked at once.
func (k *Keeper) claimsInTx(c *gin.Context) bool {
	route := c.Request.Method + " " + c.FullPath()
	if v, ok := k.routes.Load(route); ok {
		return v.(bool)
	}
	in := false
	for _, name := range c.HandlerNames() {
		if name == inTxName {
			in = true
			break
		}
	}
	k.routes.Store(route, in)
	return in
}

// recorder passes the answer through and keeps a copy of it.
type recorder struct {
	gin.ResponseWriter
	body     []byte
	overflow bool
	streamed bool
}

func (r *recorder) keep(n int, p []byte) {
	if r.overflow {
		return
	}
	if len(r.body)+n > maxKept {
		r.overflow, r.body = true, nil
		return
	}
	r.body = append(r.body, p[:n]...)
}

func (r *recorder) Write(p []byte) (int, error) {
	n, err := r.ResponseWriter.Write(p)
	r.keep(n, p)
	return n, err
}

func (r *recorder) WriteString(s string) (int, error) {
	n, err := r.ResponseWriter.WriteString(s)
	r.keep(n, []byte(s))
	return n, err
}

// Flush marks the answer streamed: it is not kept.
func (r *recorder) Flush() {
	r.streamed = true
	r.ResponseWriter.Flush()
}

var outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "agritrade_idempotency_requests_total",
	Help: "Writes sent with an Idempotency-Key, by outcome: kept (ran, answer kept), not_kept (ran, answer not kept: 5xx, 401, 408, 429, streamed, too large, or a body that could not be read), replayed, reused (422), in_flight (409), answer_lost (409: the change committed, its answer was never kept).",
}, []string{"outcome"})

// counted are the outcomes' counters, looked up once.
var counted = struct{ kept, notKept, replayed, reused, inFlight, lost prometheus.Counter }{
	outcomes.WithLabelValues("kept"), outcomes.WithLabelValues("not_kept"), outcomes.WithLabelValues("replayed"),
	outcomes.WithLabelValues("reused"), outcomes.WithLabelValues("in_flight"), outcomes.WithLabelValues("answer_lost"),
}

// Collectors are the package's metrics.
func Collectors() []prometheus.Collector { return []prometheus.Collector{outcomes} }
