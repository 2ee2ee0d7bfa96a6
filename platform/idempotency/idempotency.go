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
// and their key costs one insert in the change's own transaction: no read
// first, no commit of its own. The handler runs at once; its change waits,
// uncommitted (db.WithClaim), until it has answered; then the key's row is
// inserted with the answer and committed with the change. A client so never
// gets an answer whose change did not commit, and a change never commits
// without its kept answer (but for one too large to keep: then a retry
// answers 409 and never runs it again; the client looks the result up). A
// duplicate meets the row at that insert, on any replica (on PostgreSQL the
// second waits for the first to commit), rolls its change back and answers
// what the row says: the kept answer, or 422 for another request. An answer
// that is not kept (5xx, 408, 429) rolls the change back, so the retry runs.
// A request that changed nothing (a 4xx of validation) looks for a row after
// its handler, and keeps its answer in one insert when there is none.
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
	"errors"
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

	mu                                sync.Mutex
	insertStmt, finishStmt, claimStmt *sql.Stmt
	// routes: method and route path -> whether the route carries InTx.
	routes sync.Map
}

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
	if k.claimsInTx(c) {
		k.runInTx(c, scope, hash)
		return
	}
	owner := newOwner()
	for attempt := 0; ; attempt++ {
		now := k.now()
		{
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
		k.answerBy(c, r, hash, now)
		return
	}
	k.run(c, scope, owner)
}

// answerBy answers a request whose key the row r holds: 422 for another
// request, 409 while the row's request runs or after its answer was lost,
// else the kept answer.
func (k *Keeper) answerBy(c *gin.Context, r *record, hash string, now time.Time) {
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

// runInTx serves a request of a route marked InTx. No read looks for the
// key's row first: the handler runs at once, and its change waits, open
// (db.WithClaim), until the handler has answered; then the key's row is
// inserted with that answer and committed with the change, in one commit. A
// duplicate meets the row there (on PostgreSQL it waits for the first to
// commit), and its change rolls back: its answer is then the row's (the kept
// one, or 422 for another request). The handler's answer is held back until
// the commit, so that a client never sees an answer whose change did not
// commit. A first request (nearly all) so pays one insert in its own
// transaction; a duplicate, a handler run that writes nothing.
//
// An answer that is not kept (5xx, 408, 429) rolls the change back: the retry
// runs again. One too large to keep commits the change first, with a row
// without an answer, and then goes out: a retry answers 409 (answerLost). A
// request that changed nothing (a 4xx of validation) looks for a row after
// the handler, and keeps its answer in one insert when there is none.
func (k *Keeper) runInTx(c *gin.Context, scope, hash string) {
	st, err := k.prepared(c.Request.Context(), &k.claimStmt, claimQuery)
	if err != nil {
		apierr.Render(c, err)
		return
	}
	ctx, cl := db.WithClaim(c.Request.Context())
	c.Request = c.Request.WithContext(ctx)
	rec := &recorder{ResponseWriter: c.Writer, holding: true}
	// failed: the commit before a large answer went out failed; that answer
	// was dropped.
	var failed error
	rec.beforeRelease = func() bool {
		if !cl.Open() {
			return true
		}
		if err := cl.Commit(func(ctx context.Context, tx bun.Tx) error {
			return k.claim(ctx, tx, st, scope, hash, stateCommitted, 0, nil, nil)
		}); err != nil {
			failed = err
			return false
		}
		return true
	}
	c.Writer = rec
	defer func() {
		cl.Abort() // a panic: the change rolls back, the error middleware answers 500
		c.Writer = rec.ResponseWriter
	}()
	c.Next()
	// instead answers err (a *heldError: the row's answer) in place of the handler's.
	instead := func(err error) {
		rec.discard()
		c.Errors = c.Errors[:0]
		c.Writer = rec.ResponseWriter
		if h := (*heldError)(nil); errors.As(err, &h) {
			k.answerBy(c, h.r, hash, k.now())
		} else {
			apierr.Render(c, err) // the database's failures answer 503
		}
		apierr.RenderPending(c)
	}
	if failed != nil {
		instead(failed)
		return
	}
	if !cl.Open() && rec.holding {
		// No change waits: another request's row may hold the key.
		r, err := k.get(ctx, scope)
		switch {
		case err != nil:
			instead(err)
			return
		case r != nil && !r.claimable(k.now()):
			instead(&heldError{r})
			return
		}
	}
	apierr.RenderPending(c)
	status := rec.Status()
	switch {
	case !kept(status) || rec.streamed || rec.overflow:
		counted.notKept.Inc()
		cl.Abort()
	case cl.Open():
		if err := cl.Commit(func(ctx context.Context, tx bun.Tx) error {
			return k.claim(ctx, tx, st, scope, hash, stateDone, status, keptHeader(rec), rec.body)
		}); err != nil {
			instead(err)
			return
		}
		counted.kept.Inc()
	default:
		counted.kept.Inc()
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		// Nothing was written (a 4xx, or a route that changed nothing): the
		// answer is kept as it stands, unless a duplicate's came first.
		if err := k.keep(kctx, scope, hash, status, keptHeader(rec), rec.body); err != nil {
			k.o.Log.WithError(err).Warn("idempotency: keeping the answer failed")
		}
	}
	rec.release()
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

// recorder passes the answer through and keeps a copy of it. Holding, it
// keeps the answer back until release: the handler's answer may yet be
// replaced (runInTx). An answer too large to keep, or flushed, goes through
// from then on.
type recorder struct {
	gin.ResponseWriter
	body     []byte
	overflow bool
	streamed bool
	// holding: nothing is passed through yet; sent: WriteHeaderNow was asked.
	holding, sent bool
	// beforeRelease runs before what is held back goes out; false drops it
	// and all that follows instead.
	beforeRelease func() bool
	dropping      bool
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
	if r.dropping {
		return len(p), nil
	}
	if r.holding {
		if len(r.body)+len(p) <= maxKept {
			r.body = append(r.body, p...)
			return len(p), nil
		}
		if r.release(); r.dropping {
			return len(p), nil
		}
	}
	n, err := r.ResponseWriter.Write(p)
	r.keep(n, p)
	return n, err
}

func (r *recorder) WriteString(s string) (int, error) {
	if r.holding || r.dropping {
		return r.Write([]byte(s))
	}
	n, err := r.ResponseWriter.WriteString(s)
	r.keep(n, []byte(s))
	return n, err
}

// WriteHeaderNow sends the header, later when holding.
func (r *recorder) WriteHeaderNow() {
	if r.holding {
		r.sent = true
		return
	}
	r.ResponseWriter.WriteHeaderNow()
}

// Written and Size count what is held back as written.
func (r *recorder) Written() bool {
	if r.holding {
		return r.sent || len(r.body) > 0
	}
	return r.ResponseWriter.Written()
}

func (r *recorder) Size() int {
	if r.holding {
		if !r.Written() {
			return -1
		}
		return len(r.body)
	}
	return r.ResponseWriter.Size()
}

// Flush marks the answer streamed: it is not kept.
func (r *recorder) Flush() {
	r.release()
	r.streamed = true
	if !r.dropping {
		r.ResponseWriter.Flush()
	}
}

// release passes on what is held back, and all that follows.
func (r *recorder) release() {
	if !r.holding {
		return
	}
	if r.beforeRelease != nil && !r.beforeRelease() {
		r.discard()
		r.dropping = true
		return
	}
	r.holding = false
	if r.sent || len(r.body) > 0 {
		r.ResponseWriter.WriteHeaderNow()
	}
	if len(r.body) > 0 {
		if _, err := r.ResponseWriter.Write(r.body); err != nil {
			return // the client is gone; the answer is kept all the same
		}
	}
}

// discard drops what is held back: another answer replaces it.
func (r *recorder) discard() {
	r.body, r.sent = nil, false
	r.holding = false
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
