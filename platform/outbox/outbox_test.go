package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/outbox"
	"github.com/agritrade/api/platform/outbox/outboxtest"
	"github.com/agritrade/api/platform/schema"
	"github.com/agritrade/api/platform/testkit"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
)

const secret = "webhook-test-secret"

func migrate(t testing.TB, bdb *bun.DB) {
	t.Helper()
	ms, err := schema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.MigrateUp(context.Background(), bdb, schema.Name, ms); err != nil {
		t.Fatal(err)
	}
}

func quietLog() *logrus.Logger {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	return l
}

func enqueue(t testing.TB, bdb *bun.DB, e outbox.Event) string {
	t.Helper()
	ctx := context.Background()
	if err := db.InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error { return outbox.Enqueue(ctx, tx, e) }); err != nil {
		t.Fatal(err)
	}
	recs, err := outbox.List(ctx, bdb, outbox.Filter{Type: e.Type, Limit: 1})
	if err != nil || len(recs) != 1 {
		t.Fatalf("list after enqueue: %v %d", err, len(recs))
	}
	return recs[0].ID
}

func record(t testing.TB, bdb *bun.DB, id string) *outbox.Record {
	t.Helper()
	r, err := outbox.Get(context.Background(), bdb, id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return r
}

// waitStatus polls the stored event until it reaches status.
func waitStatus(t testing.TB, bdb *bun.DB, id, status string, timeout time.Duration) *outbox.Record {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := record(t, bdb, id)
		if r.Status == status {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("event %s is %s (attempts %d, error %q), want %s", id, r.Status, r.Attempts, r.LastError, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func runDispatcher(t testing.TB, d *outbox.Dispatcher) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func TestEnqueueIsTransactional(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		migrate(t, bdb)
		ctx := context.Background()
		boom := errors.New("the change failed")
		err := db.InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
			if err := outbox.Enqueue(ctx, tx, outbox.Event{Type: "test.rolled_back", Recipients: []string{"u1"}}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("tx error %v", err)
		}
		if recs, _ := outbox.List(ctx, bdb, outbox.Filter{Type: "test.rolled_back"}); len(recs) != 0 {
			t.Fatalf("a rolled back change left %d events", len(recs))
		}
		id := enqueue(t, bdb, outbox.Event{Type: "test.committed", Recipients: []string{"u1", " u2 ", "u1", ""}, Subject: "S", Body: "B", Data: map[string]any{"k": 1}})
		r := record(t, bdb, id)
		if r.Status != outbox.StatusPending || r.Attempts != 0 || r.Data != `{"k":1}` {
			t.Fatalf("stored %+v", r)
		}
		if got := r.RecipientList(); strings.Join(got, ",") != "u1,u2" {
			t.Fatalf("recipients %v, want u1,u2 (trimmed, deduplicated)", got)
		}
		if err := outbox.Enqueue(ctx, bdb, outbox.Event{Type: " "}); err == nil {
			t.Fatal("an event without type was accepted")
		}
		if err := outbox.Enqueue(ctx, bdb, outbox.Event{Type: "x", Data: make(chan int)}); err == nil {
			t.Fatal("an event whose data is not JSON was accepted")
		}
	})
}

// notifyConfig is the notify.* configuration of a test against local receivers.
func notifyConfig(r *outboxtest.Receiver, s *outboxtest.SMTPServer) config.Notify {
	n := config.Default().Notify
	n.Webhook.URL, n.Webhook.Secret, n.Webhook.Timeout = r.URL, r.Secret, 2*time.Second
	n.SMTP.Host, n.SMTP.Port, n.SMTP.From = s.Host, s.Port, "AgriTrade <noreply@agritrade.example>"
	n.SMTP.To = "ops@agritrade.example"
	n.SMTP.Routes = map[string]string{"expert.": "experts@agritrade.example, agronomy@agritrade.example"}
	n.SMTP.Timeout = 2 * time.Second
	n.BackoffBase, n.BackoffMax, n.PollInterval = 20*time.Millisecond, 200*time.Millisecond, 20*time.Millisecond
	n.MaxAttempts = 5
	return n
}

func TestDeliversToWebhookSMTPAndLog(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		migrate(t, bdb)
		recv := outboxtest.NewReceiver(t, secret)
		mailer := outboxtest.NewSMTPServer(t)
		logs := &lockedBuffer{}
		log := logrus.New()
		log.SetOutput(logs)
		d, err := outbox.New(bdb, notifyConfig(recv, mailer), log, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(d.Channels(), ","); got != "log,webhook,smtp" {
			t.Fatalf("channels %s", got)
		}
		msg := enqueue(t, bdb, outbox.Event{Type: "conversation.message", Recipients: []string{"user-b"}, Subject: "New message from Ann — “Texel ewes”",
			Body: "Are the ewes still for sale?\n.\nA line with a dot.", Data: map[string]any{"conversationId": "c1"}})
		q := enqueue(t, bdb, outbox.Event{Type: "expert.question", Subject: "Question", Body: "Why is my wheat yellow?", Data: map[string]any{"id": "q1"}})
		runDispatcher(t, d)

		accepted := recv.WaitAccepted(t, 2, 10*time.Second)
		if accepted[msg] != 1 || accepted[q] != 1 {
			t.Fatalf("accepted %v", accepted)
		}
		for _, dl := range recv.Deliveries() {
			if !dl.Verified || dl.Attempt != "1" {
				t.Fatalf("delivery %+v: signature not verified or not first attempt", dl)
			}
			var n outbox.Notification
			if err := json.Unmarshal(dl.Body, &n); err != nil {
				t.Fatal(err)
			}
			if n.ID != dl.EventID || n.Type != dl.Type {
				t.Fatalf("body %s does not match headers %+v", dl.Body, dl)
			}
			if n.ID == msg && (n.Subject != "New message from Ann — “Texel ewes”" || strings.Join(n.Recipients, ",") != "user-b" || string(n.Data) != `{"conversationId":"c1"}`) {
				t.Fatalf("webhook body %s", dl.Body)
			}
		}
		mails := mailer.WaitMails(t, 2, 10*time.Second)
		byTo := map[string]outboxtest.Mail{}
		for _, m := range mails {
			byTo[strings.Join(m.To, ",")] = m
			if m.From != "noreply@agritrade.example" {
				t.Fatalf("MAIL FROM %s", m.From)
			}
		}
		chat, ok := byTo["ops@agritrade.example"]
		if !ok || !strings.Contains(chat.Data, "Message-ID: <"+msg+"@agritrade.example>") || !strings.Contains(chat.Data, "Subject: =?utf-8?q?") ||
			!strings.Contains(chat.Data, "Are the ewes still for sale?") || !strings.Contains(chat.Data, "user-b") {
			t.Fatalf("conversation mail %+v", byTo)
		}
		if _, ok := byTo["experts@agritrade.example,agronomy@agritrade.example"]; !ok {
			t.Fatalf("expert question was not routed to the experts' mailboxes: %+v", byTo)
		}
		for _, id := range []string{msg, q} {
			r := waitStatus(t, bdb, id, outbox.StatusDelivered, 5*time.Second)
			if r.Attempts != 1 || r.DoneChannels != "log,webhook,smtp" || r.DeliveredAt == nil || r.ClaimedUntil != nil {
				t.Fatalf("delivered record %+v", r)
			}
		}
		if !strings.Contains(logs.String(), "event_id="+msg) {
			t.Fatalf("log channel did not log the event: %s", logs.String())
		}
	})
}

func TestRetriesOnlyFailedChannelsWithBackoff(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		migrate(t, bdb)
		recv := outboxtest.NewReceiver(t, secret)
		mailer := outboxtest.NewSMTPServer(t)
		recv.FailNext(2)   // attempts 1 and 2 fail on the webhook
		mailer.FailNext(1) // attempt 1 fails on SMTP
		d, err := outbox.New(bdb, notifyConfig(recv, mailer), quietLog(), nil)
		if err != nil {
			t.Fatal(err)
		}
		id := enqueue(t, bdb, outbox.Event{Type: "load.sent_to_driver", Recipients: []string{"driver-1"}, Subject: "A load for you", Body: "Load L-1"})
		runDispatcher(t, d)
		r := waitStatus(t, bdb, id, outbox.StatusDelivered, 10*time.Second)
		if r.Attempts != 3 || r.LastError != "" {
			t.Fatalf("record %+v, want 3 attempts", r)
		}
		var attempts []string
		for _, dl := range recv.Deliveries() {
			if dl.EventID != id || !dl.Verified {
				t.Fatalf("delivery %+v", dl)
			}
			attempts = append(attempts, fmt.Sprintf("%s:%d", dl.Attempt, dl.Status))
		}
		if got := strings.Join(attempts, ","); got != "1:503,2:503,3:200" {
			t.Fatalf("webhook attempts %s", got)
		}
		// SMTP failed once and succeeded on attempt 2; attempt 3 did not mail again.
		if n := len(mailer.Mails()); n != 1 {
			t.Fatalf("%d mails, want 1", n)
		}
	})
}

func TestDeadAfterMaxAttempts(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		migrate(t, bdb)
		recv := outboxtest.NewReceiver(t, secret)
		recv.FailNext(1 << 20)
		cfg := notifyConfig(recv, outboxtest.NewSMTPServer(t))
		cfg.MaxAttempts = 3
		d, err := outbox.New(bdb, cfg, quietLog(), nil)
		if err != nil {
			t.Fatal(err)
		}
		id := enqueue(t, bdb, outbox.Event{Type: "x.dead", Body: "never arrives"})
		runDispatcher(t, d)
		r := waitStatus(t, bdb, id, outbox.StatusDead, 10*time.Second)
		if r.Attempts != 3 || !strings.Contains(r.LastError, "webhook receiver answered 503") || strings.Contains(r.LastError, recv.URL) {
			t.Fatalf("dead record %+v", r)
		}
		time.Sleep(200 * time.Millisecond) // a dead event is not tried again
		if n := len(recv.Deliveries()); n != 3 {
			t.Fatalf("%d webhook requests, want 3", n)
		}
	})
}

func TestWrongSecretIsRejectedAndRetried(t *testing.T) {
	bdb := testkit.DB(t, testkit.SQLite)
	migrate(t, bdb)
	recv := outboxtest.NewReceiver(t, "the receiver's secret")
	ch, err := outbox.NewWebhook(recv.URL, "another secret", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	d := outbox.NewDispatcher(bdb, outbox.Options{Channels: []outbox.Channel{ch}, MaxAttempts: 2, BackoffBase: time.Millisecond, Log: quietLog()})
	id := enqueue(t, bdb, outbox.Event{Type: "x.forged"})
	if _, err := d.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := record(t, bdb, id)
	if r.Status != outbox.StatusPending || !strings.Contains(r.LastError, "401") {
		t.Fatalf("record %+v", r)
	}
	if dl := recv.Deliveries(); len(dl) != 1 || dl[0].Verified {
		t.Fatalf("deliveries %+v", dl)
	}
}

func TestSignAndVerify(t *testing.T) {
	key := []byte("k")
	body := []byte(`{"id":"1"}`)
	now := time.Unix(1_800_000_000, 0)
	ts := "1800000000"
	sig := outbox.Sign(key, ts, body)
	if !strings.HasPrefix(sig, "sha256=") || len(sig) != len("sha256=")+64 {
		t.Fatalf("signature %q", sig)
	}
	cases := []struct {
		name    string
		key     []byte
		ts, sig string
		body    []byte
		now     time.Time
		ok      bool
	}{
		{"valid", key, ts, sig, body, now, true},
		{"valid within tolerance", key, ts, sig, body, now.Add(4 * time.Minute), true},
		{"tampered body", key, ts, sig, []byte(`{"id":"2"}`), now, false},
		{"other secret", []byte("x"), ts, sig, body, now, false},
		{"replayed later", key, ts, sig, body, now.Add(6 * time.Minute), false},
		{"timestamp swapped", key, "1800000001", sig, body, now, false},
		{"bad timestamp", key, "soon", sig, body, now, false},
		{"empty signature", key, ts, "", body, now, false},
	}
	for _, c := range cases {
		err := outbox.Verify(c.key, c.ts, c.sig, c.body, c.now, 5*time.Minute)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v", c.name, err)
		}
	}
}

func TestBackoffGrowsWithJitterAndCap(t *testing.T) {
	base, maxD := time.Second, time.Minute
	rnd := rand.New(rand.NewPCG(1, 2))
	for attempt := 1; attempt <= 80; attempt++ {
		want := maxD
		if attempt <= 6 {
			want = base << (attempt - 1)
		}
		for i := 0; i < 50; i++ {
			got := outbox.Backoff(attempt, base, maxD, rnd.Int64N)
			if got < want/2 || got > want {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, got, want/2, want)
			}
		}
	}
	// The random half is really used: the low and the high end are both reached.
	if lo := outbox.Backoff(3, base, maxD, func(int64) int64 { return 0 }); lo != 2*time.Second {
		t.Fatalf("low end %v", lo)
	}
	if hi := outbox.Backoff(3, base, maxD, func(n int64) int64 { return n - 1 }); hi != 4*time.Second {
		t.Fatalf("high end %v", hi)
	}
}

// blockingChannel takes notifications only when released: a replica stuck (or
// dead) in the middle of a delivery.
type blockingChannel struct {
	started chan string
	release chan struct{}
}

func (b *blockingChannel) Name() string { return "webhook" }
func (b *blockingChannel) Deliver(_ context.Context, n outbox.Notification) error {
	b.started <- n.ID
	<-b.release
	return nil
}

func TestExpiredClaimIsTakenOver(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		migrate(t, bdb)
		recv := outboxtest.NewReceiver(t, secret)
		stuck := &blockingChannel{started: make(chan string, 1), release: make(chan struct{})}
		a := outbox.NewDispatcher(bdb, outbox.Options{Channels: []outbox.Channel{stuck}, Lease: 300 * time.Millisecond, Owner: "replica-a", Log: quietLog()})
		wh, err := outbox.NewWebhook(recv.URL, secret, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		b := outbox.NewDispatcher(bdb, outbox.Options{Channels: []outbox.Channel{wh}, Lease: time.Minute, Owner: "replica-b", Log: quietLog()})
		id := enqueue(t, bdb, outbox.Event{Type: "x.takeover"})
		aDone := make(chan struct{})
		go func() {
			defer close(aDone)
			_, _ = a.RunOnce(context.Background())
		}()
		if got := <-stuck.started; got != id {
			t.Fatalf("replica a took %s", got)
		}
		if n, err := b.RunOnce(context.Background()); err != nil || n != 0 {
			t.Fatalf("replica b claimed %d (err %v) while a's lease runs", n, err)
		}
		time.Sleep(400 * time.Millisecond)
		if n, err := b.RunOnce(context.Background()); err != nil || n != 1 {
			t.Fatalf("replica b claimed %d (err %v) after a's lease ran out", n, err)
		}
		close(stuck.release) // a comes back: its late outcome must not overwrite b's
		<-aDone
		r := record(t, bdb, id)
		if r.Status != outbox.StatusDelivered || r.ClaimedBy != "replica-b" || r.Attempts != 2 {
			t.Fatalf("record %+v", r)
		}
		if got := recv.Accepted(); got[id] != 1 {
			t.Fatalf("accepted %v", got)
		}
	})
}

func TestReplicasDoNotDoubleClaim(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		migrate(t, bdb)
		recv := outboxtest.NewReceiver(t, secret)
		const events = 60
		for i := 0; i < events; i++ {
			if err := outbox.Enqueue(context.Background(), bdb, outbox.Event{Type: "x.load", Body: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for i := 0; i < 3; i++ {
			wh, err := outbox.NewWebhook(recv.URL, secret, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			d := outbox.NewDispatcher(bdb, outbox.Options{Channels: []outbox.Channel{wh}, Workers: 4, Lease: time.Minute,
				PollInterval: 10 * time.Millisecond, Owner: fmt.Sprintf("replica-%d", i), Log: quietLog()})
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					n, err := d.RunOnce(context.Background())
					if err != nil {
						t.Error(err)
						return
					}
					if n == 0 {
						return
					}
				}
			}()
		}
		wg.Wait()
		accepted := recv.Accepted()
		if len(accepted) != events {
			t.Fatalf("%d events delivered, want %d", len(accepted), events)
		}
		for id, n := range accepted {
			if n != 1 {
				t.Fatalf("event %s delivered %d times by competing replicas", id, n)
			}
		}
		owners := map[string]int{}
		recs, _ := outbox.List(context.Background(), bdb, outbox.Filter{Type: "x.load"})
		for _, r := range recs {
			if r.Status != outbox.StatusDelivered || r.Attempts != 1 {
				t.Fatalf("record %+v", r)
			}
			owners[r.ClaimedBy]++
		}
		t.Logf("events per replica: %v", owners)
	})
}

func TestMisconfiguredChannelsFailAtStart(t *testing.T) {
	bdb := testkit.DB(t, testkit.SQLite)
	base := config.Default().Notify
	cases := map[string]func(n *config.Notify){
		"webhook without secret": func(n *config.Notify) { n.Webhook.URL = "https://hooks.example/x" },
		"webhook not http":       func(n *config.Notify) { n.Webhook.URL, n.Webhook.Secret = "ftp://hooks.example/x", "s" },
		"smtp without from":      func(n *config.Notify) { n.SMTP.Host, n.SMTP.To = "mail.example", "a@example.org" },
		"smtp without to":        func(n *config.Notify) { n.SMTP.Host, n.SMTP.From = "mail.example", "a@example.org" },
		"smtp bad route": func(n *config.Notify) {
			n.SMTP.Host, n.SMTP.From, n.SMTP.Routes = "mail.example", "a@example.org", map[string]string{"x.": "not an address"}
		},
	}
	for name, mutate := range cases {
		n := base
		mutate(&n)
		if _, err := outbox.New(bdb, n, quietLog(), nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if d, err := outbox.New(bdb, base, quietLog(), nil); err != nil || strings.Join(d.Channels(), ",") != "log" {
		t.Fatalf("default configuration: %v", err)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestWakeOnCommit: a dispatcher that polls once a minute still delivers an
// event within moments of the enqueuing transaction's commit, because the
// commit wakes it; inside db.InTx the wake waits for the commit (a rolled
// back event is never looked for), outside it comes at once.
func TestWakeOnCommit(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		migrate(t, bdb)
		recv := outboxtest.NewReceiver(t, secret)
		wh, err := outbox.NewWebhook(recv.URL, secret, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		disp := outbox.NewDispatcher(bdb, outbox.Options{Channels: []outbox.Channel{wh}, PollInterval: time.Minute, Log: quietLog()})
		// The first event is there before the dispatcher starts: its first pass
		// takes it; after that it sleeps for a minute unless woken.
		enqueue(t, bdb, outbox.Event{Type: "test.before_start"})
		runDispatcher(t, disp)
		recv.WaitAccepted(t, 1, 20*time.Second)
		ctx := context.Background()
		for i, write := range []func() error{
			func() error {
				return db.InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
					return outbox.Enqueue(ctx, tx, outbox.Event{Type: "test.in_tx"})
				})
			},
			func() error { return outbox.Enqueue(ctx, bdb, outbox.Event{Type: "test.no_tx"}) },
		} {
			if err := write(); err != nil {
				t.Fatal(err)
			}
			// Far less than the poll interval: only a wake delivers it in time.
			recv.WaitAccepted(t, 2+i, 20*time.Second)
		}
	})
}
