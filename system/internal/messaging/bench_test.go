package messaging_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/outbox"
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
