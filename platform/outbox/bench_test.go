package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/outbox"
	"github.com/agritrade/api/platform/outbox/outboxtest"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// BenchmarkEnqueue measures writing one event in its own transaction.
func BenchmarkEnqueue(b *testing.B) {
	for _, d := range []testkit.Dialect{testkit.SQLite, testkit.Postgres} {
		b.Run(string(d), func(b *testing.B) {
			bdb := testkit.DB(b, d)
			migrate(b, bdb)
			ctx := context.Background()
			e := outbox.Event{Type: "bench.enqueue", Recipients: []string{"u1", "u2"}, Subject: "s", Body: "b", Data: map[string]any{"n": 1}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := db.InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error { return outbox.Enqueue(ctx, tx, e) }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDispatch measures claiming and delivering events to a local signed
// webhook receiver (4 deliveries at a time, one dispatcher); events/s is reported.
func BenchmarkDispatch(b *testing.B) {
	for _, d := range []testkit.Dialect{testkit.SQLite, testkit.Postgres} {
		b.Run(string(d), func(b *testing.B) {
			bdb := testkit.DB(b, d)
			migrate(b, bdb)
			recv := outboxtest.NewReceiver(b, secret)
			wh, err := outbox.NewWebhook(recv.URL, secret, 5*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			disp := outbox.NewDispatcher(bdb, outbox.Options{Channels: []outbox.Channel{wh}, Workers: 4, Log: quietLog()})
			ctx := context.Background()
			for i := 0; i < b.N; i++ {
				if err := outbox.Enqueue(ctx, bdb, outbox.Event{Type: "bench.dispatch", Body: "b"}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			start := time.Now()
			done := 0
			for done < b.N {
				n, err := disp.RunOnce(ctx)
				if err != nil {
					b.Fatal(err)
				}
				done += n
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}
