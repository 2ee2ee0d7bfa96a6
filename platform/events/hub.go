package events

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/agritrade/api/platform/bus"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
)

// Options bound and tune a Hub (config keys events.*).
type Options struct {
	// Retention is how long events stay replayable (default 24 h).
	Retention time.Duration
	// Heartbeat is the interval of the comment lines that keep idle streams
	// and the proxies between alive (default 25 s).
	Heartbeat time.Duration
	// MaxPerUser bounds the open streams of one user on one replica (429 above).
	MaxPerUser int
	// MaxStreams bounds the open streams of one replica (503 above); each
	// stream is one of the http.max_conns connections, so it stays below that.
	MaxStreams int
	// PurgeEvery is the interval of the retention purge (default 10 min).
	PurgeEvery time.Duration
}

func (o *Options) defaults() {
	if o.Retention <= 0 {
		o.Retention = 24 * time.Hour
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 25 * time.Second
	}
	if o.MaxPerUser <= 0 {
		o.MaxPerUser = 8
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = 3000
	}
	if o.PurgeEvery <= 0 {
		o.PurgeEvery = 10 * time.Minute
	}
}

// topic is the bus topic of committed event ids.
const topic = "events.committed"

// streamBuffer is how many events wait for a slow stream before it falls back
// to reading the log (it never blocks the fan-out).
const streamBuffer = 16

// Hub keeps this replica's open streams by audience and feeds them the events
// committed on any replica.
type Hub struct {
	db   *bun.DB
	bus  bus.Bus
	log  logrus.FieldLogger
	opts Options

	mu      sync.Mutex
	byAud   map[string]map[*stream]struct{}
	perUser map[string]int
	total   int
	closed  bool
	done    chan struct{} // closed by Close: every stream ends

	ids  chan announcement // committed events waiting for the fan-out
	once sync.Once

	// seen is the highest id announced so far (0: none yet) and filled the
	// ids above an earlier seen that fanOut read from the log, whose own
	// announcements are still to come; both belong to Run's goroutine.
	seen   int64
	filled map[int64]struct{}
}

// NewHub makes the hub over the database and the bus; Run starts it.
func NewHub(bdb *bun.DB, b bus.Bus, log logrus.FieldLogger, o Options) *Hub {
	o.defaults()
	h := &Hub{
		db: bdb, bus: b, log: log, opts: o,
		byAud: map[string]map[*stream]struct{}{}, perUser: map[string]int{},
		done: make(chan struct{}), ids: make(chan announcement, 4096),
	}
	b.Subscribe(topic, h.onBus)
	return h
}

// Options answers the hub's effective options.
func (h *Hub) Options() Options { return h.opts }

// announcement is what goes over the bus for a committed event: its id and,
// when small enough, the event itself, so that each replica hands it to its
// streams at once instead of reading it back from the database (a round trip
// on the path of every event, and the slowest part of it when the database
// is busy). A large event goes by id and is read.
type announcement struct {
	ID        int64           `json:"id"`
	Type      string          `json:"type,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Audiences []string        `json:"audiences,omitempty"`
	CreatedAt time.Time       `json:"createdAt,omitzero"`
}

// maxInline bounds the data and audiences an announcement carries (the
// PostgreSQL bus's NOTIFY payload is under 8,000 bytes).
const maxInline = 4000

func newAnnouncement(r *Record, audiences []string) announcement {
	size := len(r.Data) + len(r.Type)
	for _, a := range audiences {
		size += len(a) + 3
	}
	if size > maxInline || !json.Valid([]byte(r.Data)) {
		return announcement{ID: r.ID}
	}
	return announcement{ID: r.ID, Type: r.Type, Data: json.RawMessage(r.Data), Audiences: audiences, CreatedAt: r.CreatedAt}
}

// records answers the event's rows, one per audience (as byIDs reads them),
// or false when the announcement carries only the id.
func (a announcement) records() ([]Record, bool) {
	if a.Type == "" || len(a.Audiences) == 0 {
		return nil, false
	}
	out := make([]Record, len(a.Audiences))
	for i, aud := range a.Audiences {
		out[i] = Record{ID: a.ID, Type: a.Type, Data: string(a.Data), CreatedAt: a.CreatedAt, Audience: aud}
	}
	return out, true
}

func (h *Hub) publish(a announcement) {
	payload, _ := json.Marshal(a)
	// The bus delivers to this replica's own subscription too.
	if err := h.bus.Publish(context.Background(), topic, payload); err != nil {
		h.log.WithError(err).Warn("events: announcing an event failed; streams get it on their next read of the log")
		h.enqueue(a)
	}
}

func (h *Hub) onBus(_ context.Context, payload []byte) {
	var a announcement
	if err := json.Unmarshal(payload, &a); err != nil || a.ID <= 0 {
		return
	}
	h.enqueue(a)
}

// enqueue never blocks the bus: when the fan-out is this far behind, every
// stream is told to read the log instead.
func (h *Hub) enqueue(a announcement) {
	select {
	case h.ids <- a:
	default:
		h.kickAll()
	}
}

// Run registers the hub for this process's commits, fans committed events
// out to the streams and purges expired events, until ctx ends.
func (h *Hub) Run(ctx context.Context) error {
	hubs.Lock()
	hubs.set[h] = struct{}{}
	hubs.Unlock()
	defer func() {
		hubs.Lock()
		delete(hubs.set, h)
		hubs.Unlock()
	}()
	// A bus subscription that was down may have missed announcements: the
	// streams read the log from where they are.
	h.bus.OnSubscribed(func(context.Context) { h.kickAll() })
	purge := time.NewTicker(h.opts.PurgeEvery)
	defer purge.Stop()
	heartbeat := time.NewTicker(h.opts.Heartbeat)
	defer heartbeat.Stop()
	batch := make([]announcement, 0, 256)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-heartbeat.C:
			h.each(func(d *detached) { d.comment("keep-alive") })
		case <-purge.C:
			if n, err := h.Purge(ctx); err != nil {
				h.log.WithError(err).Warn("events: purge failed")
			} else if n > 0 {
				h.log.WithField("events", n).Debug("events: expired events purged")
			}
		case a := <-h.ids:
			batch = append(batch[:0], a)
		drain:
			for len(batch) < cap(batch) {
				select {
				case a := <-h.ids:
					batch = append(batch, a)
				default:
					break drain
				}
			}
			h.fanOut(ctx, batch)
		}
	}
}

// Purge deletes the events older than the retention.
func (h *Hub) Purge(ctx context.Context) (int64, error) {
	return purge(ctx, h.db, time.Now().Add(-h.opts.Retention))
}

// maxGap bounds the ids fanOut reads from the log for one gap in the
// announcements; a wider gap (the bus lost announcements) makes every stream
// read the log instead.
const maxGap = 1000

// fanOut hands each announced event to the streams of its audiences: those
// the announcement carries at once, the others read once, in id order.
//
// Announcements may arrive out of id order: transactions of this replica
// announce after their commits, side by side, and those of other replicas
// come over the bus. A stream sends only ids above the last it sent (what
// lets it resume from the log with "id > last"), so an event announced after
// a higher one would never be sent. Event ids are commit-ordered
// (inCommitOrder): once id N is announced, every lower id is committed or
// never will be. So an announced id above the next one expected reveals a
// gap, which is read from the log here, once per gap for all the streams,
// and handed out before it; its own late announcement is then skipped
// (filled). A gap that cannot be read, or is too wide, hands out nothing of
// the batch and makes every stream read the log from its last id instead:
// sending the ids above the gap first would move the streams past it.
func (h *Hub) fanOut(ctx context.Context, batch []announcement) {
	h.mu.Lock()
	idle := h.total == 0
	h.mu.Unlock()
	slices.SortFunc(batch, func(x, y announcement) int { return cmp.Compare(x.ID, y.ID) })
	var recs []Record
	var ids []int64
	readLog := false
	for _, a := range batch {
		if _, ok := h.filled[a.ID]; ok {
			delete(h.filled, a.ID) // handed out from the log already
			continue
		}
		if a.ID > h.seen {
			// At the first announcement (seen 0) nothing is known to be
			// missing: a stream opened before it started from the log.
			if h.seen > 0 && a.ID > h.seen+1 && !idle && !readLog {
				if a.ID-h.seen-1 > maxGap {
					readLog = true
				} else if gap, err := between(ctx, h.db, h.seen, a.ID); err != nil {
					h.log.WithError(err).Warn("events: reading events announced out of order failed; streams read the log instead")
					readLog = true
				} else {
					if h.filled == nil || len(h.filled) > 4*maxGap {
						// Ids never announced (a lost announcement) would
						// stay: start afresh now and then; an id filled and
						// announced again reaches the streams twice and each
						// sends it once.
						h.filled = map[int64]struct{}{}
					}
					for _, r := range gap {
						h.filled[r.ID] = struct{}{}
					}
					recs = append(recs, gap...)
				}
			}
			h.seen = a.ID
		}
		if idle || readLog {
			continue
		}
		if rs, ok := a.records(); ok {
			recs = append(recs, rs...)
		} else {
			ids = append(ids, a.ID)
		}
	}
	if readLog {
		h.kickAll()
		return
	}
	if len(ids) > 0 {
		read, err := byIDs(ctx, h.db, ids)
		if err != nil {
			h.log.WithError(err).Warn("events: reading announced events failed; streams read the log instead")
			h.kickAll()
			return
		}
		recs = append(recs, read...)
	}
	// A stream writes ids in ascending order only.
	slices.SortStableFunc(recs, func(x, y Record) int { return cmp.Compare(x.ID, y.ID) })
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range recs {
		for s := range h.byAud[recs[i].Audience] {
			s.offer(&recs[i])
		}
	}
}

// each runs fn for every detached stream (outside the hub's lock).
func (h *Hub) each(fn func(d *detached)) {
	h.mu.Lock()
	var ds []*detached
	seen := map[*stream]bool{}
	for _, set := range h.byAud {
		for s := range set {
			if s.d != nil && !seen[s] {
				seen[s] = true
				ds = append(ds, s.d)
			}
		}
	}
	h.mu.Unlock()
	for _, d := range ds {
		fn(d)
	}
}

func (h *Hub) kickAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, set := range h.byAud {
		for s := range set {
			s.kick()
		}
	}
}

// errTooManyForUser and errTooMany refuse a stream over the bounds.
var (
	errTooManyForUser = errors.New("too many open streams for this user")
	errTooMany        = errors.New("too many open streams on this replica")
	errClosing        = errors.New("the server is shutting down")
)

// open registers a stream for the audiences of user.
func (h *Hub) open(user string, audiences []string) (*stream, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return nil, errClosing
	case h.total >= h.opts.MaxStreams:
		return nil, errTooMany
	case h.perUser[user] >= h.opts.MaxPerUser:
		return nil, errTooManyForUser
	}
	s := &stream{user: user, audiences: audiences, ch: make(chan *Record, streamBuffer), kicked: make(chan struct{}, 1)}
	for _, a := range audiences {
		set := h.byAud[a]
		if set == nil {
			set = map[*stream]struct{}{}
			h.byAud[a] = set
		}
		set[s] = struct{}{}
	}
	h.perUser[user]++
	h.total++
	return s, nil
}

func (h *Hub) release(s *stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range s.audiences {
		if set := h.byAud[a]; set != nil {
			delete(set, s)
			if len(set) == 0 {
				delete(h.byAud, a)
			}
		}
	}
	if h.perUser[s.user]--; h.perUser[s.user] <= 0 {
		delete(h.perUser, s.user)
	}
	h.total--
}

// Open answers how many streams this replica holds.
func (h *Hub) Open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}

// Close ends every stream (graceful shutdown: clients reconnect to another
// replica with their Last-Event-ID) and refuses new ones.
func (h *Hub) Close() {
	h.once.Do(func() {
		h.mu.Lock()
		h.closed = true
		h.mu.Unlock()
		close(h.done)
		h.each(func(d *detached) {
			d.end("shutdown", `{"reason":"the server is shutting down; reconnect with Last-Event-ID"}`)
		})
	})
}

// stream is one open connection's subscription. A stream is served either
// by its request's goroutine (ch and kicked; when the connection cannot be
// taken over) or, usually, detached: its connection taken over from the HTTP
// server, with no goroutine of its own while idle (d), which is what keeps
// thousands of open streams cheap.
type stream struct {
	user      string
	audiences []string
	ch        chan *Record
	kicked    chan struct{}
	d         *detached
}

// offer hands a record to the stream without ever blocking the fan-out; a
// full buffer makes the stream read the log from its last id instead.
func (s *stream) offer(r *Record) {
	if s.d != nil {
		s.d.offer(r)
		return
	}
	select {
	case s.ch <- r:
	default:
		s.kick()
	}
}

func (s *stream) kick() {
	if s.d != nil {
		s.d.kick()
		return
	}
	select {
	case s.kicked <- struct{}{}:
	default:
	}
}
