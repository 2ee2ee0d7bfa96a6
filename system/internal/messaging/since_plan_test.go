package messaging_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

type fillConversation struct {
	bun.BaseModel `bun:"table:system_conversations"`

	ID           string    `bun:"id,pk"`
	CreatedBy    string    `bun:"created_by"`
	CreatedAt    time.Time `bun:"created_at"`
	UpdatedAt    time.Time `bun:"updated_at"`
	MessageCount int       `bun:"message_count"`
}

type fillParticipant struct {
	bun.BaseModel `bun:"table:system_conversation_participants"`

	ConversationID string    `bun:"conversation_id,pk"`
	UserID         string    `bun:"user_id,pk"`
	JoinedAt       time.Time `bun:"joined_at"`
	UpdatedAt      time.Time `bun:"updated_at"`
}

type fillMessage struct {
	bun.BaseModel `bun:"table:system_conversation_messages"`

	ID             string    `bun:"id,pk"`
	ConversationID string    `bun:"conversation_id"`
	Seq            int       `bun:"seq"`
	SentByID       string    `bun:"sent_by_id"`
	Message        string    `bun:"message"`
	CreatedAt      time.Time `bun:"created_at"`
}

// fillConversations writes n two-party conversations of one message between
// 2,000 users (ann in her share), changes spread over 30 days, and refreshes
// the planner's statistics.
func fillConversations(t *testing.T, db *bun.DB, n int) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	var convs []fillConversation
	var parts []fillParticipant
	var msgs []fillMessage
	flush := func() {
		for _, m := range []any{&convs, &parts, &msgs} {
			if _, err := db.NewInsert().Model(m).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		convs, parts, msgs = convs[:0], parts[:0], msgs[:0]
	}
	user := func(i int) string {
		if i%2000 == 11 {
			return ann.UserID
		}
		return fmt.Sprintf("user-%d", i%2000)
	}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("conv-%07d", i)
		at := now.Add(-time.Duration(i%43200) * time.Minute)
		convs = append(convs, fillConversation{ID: id, CreatedBy: user(i), CreatedAt: at, UpdatedAt: at, MessageCount: 1})
		parts = append(parts, fillParticipant{ConversationID: id, UserID: user(i), JoinedAt: at, UpdatedAt: at},
			fillParticipant{ConversationID: id, UserID: user(i*7 + 3), JoinedAt: at, UpdatedAt: at})
		msgs = append(msgs, fillMessage{ID: "msg-" + id, ConversationID: id, Seq: 1, SentByID: user(i), Message: "Hello", CreatedAt: at})
		if len(convs) == 500 || i == n-1 {
			flush()
		}
	}
	for _, table := range []string{"system_conversations", "system_conversation_participants", "system_conversation_messages"} {
		q := "ANALYZE " + table
		if db.Dialect().Name() == dialect.PG {
			q = "VACUUM ANALYZE " + table
		}
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUpdatedSinceReadsSinceIndex: over 20,000 analysed conversations, the
// statements of a catch-up, as the store issues them, find the caller's
// changed conversations by a range of the participants' (user_id,
// updated_at) index, the conversations and their messages by key: no scan.
func TestUpdatedSinceReadsSinceIndex(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		fillConversations(t, db, 20000)
		rec := testkit.RecordQueries(db)
		a := client{s, s.Token(ann)}
		pkey, partKey := "system_conversations_pkey", "system_conversation_participants_pkey"
		if db.Dialect().Name() != dialect.PG {
			pkey, partKey = "sqlite_autoindex_system_conversations_1", "sqlite_autoindex_system_conversation_participants_1"
		}
		// What each statement of a catch-up may read, by what it is.
		since := testkit.Reads{Table: "system_conversation_participants", Aliases: []string{"p"}, Want: []string{"system_conversation_participants_since"}}
		byKey := testkit.Reads{Table: "system_conversations", Aliases: []string{"c"}, Want: []string{pkey}}
		type statement struct {
			name  string
			match func(q string) bool
			reads []testkit.Reads
		}
		statements := []statement{
			{"count", func(q string) bool { return strings.HasPrefix(q, "SELECT count(*)") }, []testkit.Reads{since}},
			{"page", func(q string) bool { return strings.Contains(q, "p.last_read_seq FROM") }, []testkit.Reads{since, byKey}},
			{"unread", func(q string) bool { return strings.Contains(q, "COUNT(*) AS n FROM system_conversation_messages") },
				[]testkit.Reads{{Table: "system_conversation_messages", Aliases: []string{"m"}, Want: []string{"system_conversation_messages_seq"}},
					// The read mark by either key of the participation.
					{Table: "system_conversation_participants", Aliases: []string{"p"}, Also: []string{partKey, "system_conversation_participants_user"}}}},
			{"messages", func(q string) bool { return strings.Contains(q, `FROM "system_conversation_messages"`) },
				[]testkit.Reads{{Table: "system_conversation_messages", Aliases: []string{"m"}, Want: []string{"system_conversation_messages_seq"}}, byKey}},
			{"participants", func(q string) bool {
				return strings.Contains(q, `FROM "system_conversation_participants" AS "p" WHERE (p.conversation_id IN`)
			},
				[]testkit.Reads{{Table: "system_conversation_participants", Aliases: []string{"p"}, Want: []string{partKey}}}},
		}
		cutoff := url.QueryEscape(time.Now().UTC().Add(-72 * time.Hour).Format(time.RFC3339))
		for name, query := range map[string]string{"first page": "", "page 2": "&offset=1&limit=2", "newest first": "&sortDesc=true"} {
			t.Run(name, func(t *testing.T) {
				var total string
				queries := rec.Record(func() {
					total = a.get(t, "/system/v1/conversations?updatedSinceUTC="+cutoff+query, 200).Header.Get("X-Total-Count")
				})
				if total == "0" {
					t.Fatal("the catch-up found nothing: the plans would not show the page's statements")
				}
				seen := map[string]bool{}
				for _, q := range queries {
					i := slices.IndexFunc(statements, func(st statement) bool { return st.match(q) })
					if i < 0 {
						t.Fatalf("unexpected statement: %s", q)
					}
					seen[statements[i].name] = true
					for _, r := range statements[i].reads {
						testkit.AssertIndexed(t, db, q, r)
					}
					// The page is read in the since index's order: no sort
					// of every change since the instant for a page of them.
					if statements[i].name == "page" && db.Dialect().Name() != dialect.PG {
						if plan := strings.Join(testkit.Plan(t, db, q), "\n"); strings.Contains(plan, "TEMP B-TREE") {
							t.Fatalf("the page sorts its matches:\n%s", plan)
						}
					}
				}
				for _, st := range statements {
					if !seen[st.name] {
						t.Fatalf("no %s statement among %q", st.name, queries)
					}
				}
			})
		}
	})
}
