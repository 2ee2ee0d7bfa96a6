package outbox

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/telemetry"
	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Channel delivers notifications somewhere. Deliver must return nil only when
// the notification has been handed over; any error makes the event retried on
// that channel (the channels that succeeded are not repeated).
type Channel interface {
	// Name identifies the channel in the stored progress of an event ("webhook").
	Name() string
	// Deliver hands one notification over; it must bound its own duration.
	Deliver(ctx context.Context, n Notification) error
}

// Options tune a Dispatcher; zero values take the defaults of the configuration.
type Options struct {
	Channels     []Channel
	MaxAttempts  int
	BackoffBase  time.Duration
	BackoffMax   time.Duration
	Lease        time.Duration
	PollInterval time.Duration
	Workers      int
	Retention    time.Duration
	Log          logrus.FieldLogger
	// Owner names this dispatcher in claims; default host name plus a random suffix.
	Owner string
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// Tracing makes each delivery a span, child of the enqueuing request's
	// span; nil is tracing off.
	Tracing *telemetry.Tracing
}

// Dispatcher claims due events and delivers them to its channels.
type Dispatcher struct {
	db   *bun.DB
	o    Options
	wake chan struct{}
	mu   sync.Mutex
	rnd  *rand.Rand
}

// NewDispatcher makes a dispatcher over db with the given options.
func NewDispatcher(db *bun.DB, o Options) *Dispatcher {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 10
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = 10 * time.Second
	}
	if o.BackoffMax < o.BackoffBase {
		o.BackoffMax = max(time.Hour, o.BackoffBase)
	}
	if o.Lease <= 0 {
		o.Lease = 2 * time.Minute
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Log == nil {
		l := logrus.New()
		l.SetOutput(os.Stderr)
		o.Log = l
	}
	if o.Owner == "" {
		host, _ := os.Hostname()
		o.Owner = host + "/" + uuid.NewString()[:8]
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Dispatcher{db: db, o: o, wake: make(chan struct{}, 1), rnd: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))} //nolint:gosec // retry jitter needs spread, not secrecy
}

// New builds the dispatcher of the binary from the notify.* configuration: the
// log channel always, the webhook when notify.webhook.url is set, SMTP when
// notify.smtp.host is set. A channel that is half configured is an error.
// tr traces the deliveries and the webhook's HTTP calls (nil: off).
func New(db *bun.DB, cfg config.Notify, log logrus.FieldLogger, tr *telemetry.Tracing) (*Dispatcher, error) {
	channels := []Channel{NewLogChannel(log)}
	if cfg.Webhook.URL != "" {
		wh, err := NewWebhook(cfg.Webhook.URL, cfg.Webhook.Secret, cfg.Webhook.Timeout)
		if err != nil {
			return nil, err
		}
		wh.client.Transport = tr.Transport(nil)
		channels = append(channels, wh)
	}
	if cfg.SMTP.Host != "" {
		sm, err := NewSMTP(cfg.SMTP)
		if err != nil {
			return nil, err
		}
		channels = append(channels, sm)
	}
	return NewDispatcher(db, Options{
		Channels: channels, MaxAttempts: cfg.MaxAttempts, BackoffBase: cfg.BackoffBase, BackoffMax: cfg.BackoffMax,
		Lease: cfg.Lease, PollInterval: cfg.PollInterval, Workers: cfg.Workers, Retention: cfg.Retention, Log: log,
		Tracing: tr,
	}), nil
}

// Channels names the dispatcher's channels.
func (d *Dispatcher) Channels() []string {
	out := make([]string, len(d.o.Channels))
	for i, c := range d.o.Channels {
		out[i] = c.Name()
	}
	return out
}

// Wake makes a sleeping Run look for due events now instead of at its next poll.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// running holds the dispatchers whose Run is under way in this process, for
// Enqueue to wake once the enqueuing transaction commits. The events of other
// replicas' writes are theirs to deliver: every replica runs a dispatcher.
var running = struct {
	sync.Mutex
	set map[*Dispatcher]struct{}
}{set: map[*Dispatcher]struct{}{}}

func wakeRunning() {
	running.Lock()
	defer running.Unlock()
	for d := range running.set {
		d.Wake()
	}
}

// Run delivers due events until ctx ends. Deliveries in flight when ctx ends
// finish (each channel bounds its own time) and their outcome is stored, so a
// graceful shutdown leaves no claim behind.
func (d *Dispatcher) Run(ctx context.Context) error {
	log := d.o.Log
	log.WithField("channels", strings.Join(d.Channels(), ",")).WithField("owner", d.o.Owner).Info("outbox dispatcher started")
	running.Lock()
	running.set[d] = struct{}{}
	running.Unlock()
	defer func() {
		running.Lock()
		delete(running.set, d)
		running.Unlock()
	}()
	nextPurge := d.o.Now().Add(time.Minute)
	for {
		n, err := d.RunOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			log.WithError(err).Warn("outbox claim failed")
		}
		if d.o.Retention > 0 && d.o.Now().After(nextPurge) {
			nextPurge = d.o.Now().Add(time.Hour)
			if gone, err := purge(telemetry.Untraced(ctx), d.db, d.o.Now().UTC().Add(-d.o.Retention)); err != nil {
				log.WithError(err).Warn("outbox purge failed")
			} else if gone > 0 {
				log.WithField("purged", gone).Info("delivered outbox events purged")
			}
		}
		if err == nil && n == d.o.Workers {
			continue // a full batch: more may be due right now
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.wake:
		case <-time.After(d.o.PollInterval):
		}
	}
}

// RunOnce claims up to Workers due events, delivers them side by side and
// stores each outcome. It answers how many events it claimed.
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	recs, err := claim(telemetry.Untraced(ctx), d.db, d.o.Owner, d.o.Now().UTC(), d.o.Lease, d.o.Workers)
	if err != nil {
		return 0, fmt.Errorf("claim outbox events: %w", err)
	}
	// Deliveries and their bookkeeping outlive a cancelled ctx: stopping half-way
	// would only leave a claim to expire and a duplicate delivery later.
	dctx := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for i := range recs {
		wg.Add(1)
		go func(rec *Record) {
			defer wg.Done()
			d.process(dctx, rec)
		}(&recs[i])
	}
	wg.Wait()
	return len(recs), nil
}

// process delivers one claimed event to the channels it has not reached yet and
// stores the outcome: delivered, retry later, or dead.
func (d *Dispatcher) process(ctx context.Context, rec *Record) {
	var span trace.Span
	if d.o.Tracing.Enabled() {
		ctx, span = d.o.Tracing.Tracer().Start(telemetry.Extract(ctx, rec.TraceContext), "outbox deliver",
			trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
				attribute.String("messaging.system", "agritrade.outbox"),
				attribute.String("messaging.message.id", rec.ID),
				attribute.String("agritrade.event.type", rec.Type),
				attribute.Int("agritrade.event.attempt", rec.Attempts)))
		defer span.End()
	}
	log := withContext(d.o.Log, ctx).WithFields(logrus.Fields{"event_id": rec.ID, "event_type": rec.Type, "attempt": rec.Attempts})
	done := splitDone(rec.DoneChannels)
	var failures, failedChannels []string
	if rec.Attempts > d.o.MaxAttempts {
		// Claimed MaxAttempts times without an outcome: the process died during
		// every attempt. Stop before it takes another replica down.
		failures = append(failures, "no outcome after the maximum number of claims")
		failedChannels = append(failedChannels, "claim")
	} else {
		n := rec.Notification()
		for _, ch := range d.o.Channels {
			if slices.Contains(done, ch.Name()) {
				continue
			}
			start := time.Now()
			err := ch.Deliver(ctx, n)
			deliveryDuration.WithLabelValues(ch.Name()).Observe(time.Since(start).Seconds())
			if err != nil {
				deliveriesTotal.WithLabelValues(ch.Name(), "failed").Inc()
				failedChannels = append(failedChannels, ch.Name())
				failures = append(failures, ch.Name()+": "+err.Error())
				log.WithField("channel", ch.Name()).WithError(err).Warn("notification delivery failed")
				continue
			}
			deliveriesTotal.WithLabelValues(ch.Name(), "delivered").Inc()
			done = append(done, ch.Name())
		}
	}
	now := d.o.Now().UTC()
	rec.DoneChannels = strings.Join(done, ",")
	switch {
	case len(failures) == 0:
		rec.Status, rec.LastError, rec.DeliveredAt = StatusDelivered, "", &now
	case rec.Attempts >= d.o.MaxAttempts:
		rec.Status, rec.LastError = StatusDead, truncate(strings.Join(failures, "; "), 1000)
		log.WithField("error", rec.LastError).Error("notification is dead: no more attempts")
		for _, name := range failedChannels {
			deadTotal.WithLabelValues(name).Inc()
		}
	default:
		rec.LastError = truncate(strings.Join(failures, "; "), 1000)
		rec.DueAt = now.Add(d.backoff(rec.Attempts))
	}
	if span != nil && len(failures) > 0 {
		span.SetStatus(codes.Error, truncate(strings.Join(failures, "; "), 200))
	}
	ok, err := finish(ctx, d.db, rec, d.o.Owner)
	switch {
	case err != nil:
		// The claim stays and runs out; the event is retried then (at least once).
		log.WithError(err).Warn("storing the outcome of a delivery failed")
	case !ok:
		log.Warn("the claim ran out before the delivery ended; another replica owns the event now")
	}
}

// backoff is the delay before attempt+1: BackoffBase doubled per attempt, capped
// at BackoffMax, with "equal jitter" (half fixed, half random) so that replicas
// that failed together do not retry together.
func (d *Dispatcher) backoff(attempt int) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return Backoff(attempt, d.o.BackoffBase, d.o.BackoffMax, d.rnd.Int64N)
}

// Backoff is the delay after the given failed attempt (1 = first): base·2^(attempt-1)
// capped at max, of which the upper half is random (rnd(n) answers 0..n-1).
func Backoff(attempt int, base, max time.Duration, rnd func(n int64) int64) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := max
	if attempt <= 32 {
		if e := base << (attempt - 1); e > 0 && e < max {
			d = e
		}
	}
	half := d / 2
	return half + time.Duration(rnd(int64(d-half)+1))
}

// withContext ties the dispatcher's log entries to the delivery's trace (the
// logging hook reads trace and span ids from an entry's context).
func withContext(log logrus.FieldLogger, ctx context.Context) logrus.FieldLogger {
	if e, ok := log.(*logrus.Entry); ok {
		return e.WithContext(ctx)
	}
	return log
}

func splitDone(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
