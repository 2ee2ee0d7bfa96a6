package messaging_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/outbox"
	"github.com/agritrade/api/platform/outbox/outboxtest"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
)

// BenchmarkListConversations lists a page of 20 of 200 conversations (10
// messages each) through the real engine: the cost of one list request.
func BenchmarkListConversations(b *testing.B) {
	for _, d := range []testkit.Dialect{testkit.SQLite, testkit.Postgres} {
		b.Run(string(d), func(b *testing.B) {
			s := testkit.NewServer(b, testkit.DB(b, d), func(p *app.Platform) []module.Module {
				return []module.Module{system.New(p.Deps(system.Name))}
			}, testkit.Options{NoValidate: true})
			tok := s.Token(ann)
			for i := 0; i < 200; i++ {
				r := s.Do(testkit.Request{Method: http.MethodPost, Path: "/system/v1/conversations", Token: tok, JSON: map[string]any{"to": fmt.Sprintf("user-%d", i), "message": "m0"}})
				var c struct{ ConversationID string }
				r.Decode(b, &c)
				for j := 1; j < 10; j++ {
					s.Do(testkit.Request{Method: http.MethodPost, Path: "/system/v1/conversations/" + c.ConversationID + "/messages", Token: tok, JSON: map[string]any{"to": fmt.Sprintf("user-%d", i), "message": fmt.Sprintf("m%d", j)}})
				}
			}
			// Let the dispatcher deliver the 2000 notifications first: it shares the database.
			for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if recs, err := outbox.List(context.Background(), s.Platform.DB, outbox.Filter{Status: outbox.StatusPending, Limit: 1}); err != nil || len(recs) == 0 {
					break
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if r := s.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/conversations?limit=20&offset=100", Token: tok}); r.Status != http.StatusOK {
					b.Fatal(r.Status)
				}
			}
		})
	}
}

// BenchmarkMessageToWebhook measures how long a notification takes to leave:
// from the 2xx of "create a conversation from a message" to the signed
// webhook's receipt, one write at a time, 200 writes per round, with the
// dispatcher's default poll interval (notify.poll_interval, 1 s). It reports
// the p50 and p99 in milliseconds. Run with -benchtime=1x.
func BenchmarkMessageToWebhook(b *testing.B) {
	const writes = 200
	for _, d := range []testkit.Dialect{testkit.SQLite, testkit.Postgres} {
		b.Run(string(d), func(b *testing.B) {
			recv := outboxtest.NewReceiver(b, "hook-secret")
			s := testkit.NewServer(b, testkit.DB(b, d), func(p *app.Platform) []module.Module {
				return []module.Module{system.New(p.Deps(system.Name))}
			}, testkit.Options{NoValidate: true, Configure: func(c *config.Config) {
				c.Notify.Webhook.URL, c.Notify.Webhook.Secret = recv.URL, "hook-secret"
				c.Log.Level = "warn"
			}})
			tok := s.Token(ann)
			var lat []time.Duration
			for i := 0; i < b.N; i++ {
				for j := 0; j < writes; j++ {
					r := s.Do(testkit.Request{Method: http.MethodPost, Path: "/system/v1/conversations", Token: tok, JSON: map[string]any{"to": "user-bob", "message": fmt.Sprintf("m%d", j)}})
					if r.Status != http.StatusOK {
						b.Fatal(r.Status)
					}
					done := time.Now()
					n := i*writes + j + 1
					recv.WaitAccepted(b, n, time.Minute)
					got := recv.Deliveries()
					lat = append(lat, got[len(got)-1].At.Sub(done))
				}
			}
			slices.Sort(lat)
			p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
			b.ReportMetric(p(0.5), "p50-ms")
			b.ReportMetric(p(0.99), "p99-ms")
			b.Logf("%s: %d writes, write 2xx → webhook received: p50 %.1f ms, p99 %.1f ms, max %.1f ms", d, len(lat), p(0.5), p(0.99), p(1))
		})
	}
}
