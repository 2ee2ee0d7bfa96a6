// Package outbox is the transactional outbox every notification of the project
// goes through.
//
// A feature calls Enqueue with the transaction of the change that causes the
// notification, so the notification exists exactly when the change does: a
// rollback drops both, a commit keeps both, and a process that dies right after
// the commit loses nothing. A Dispatcher runs in every replica of the binary:
// it claims due events (FOR UPDATE SKIP LOCKED on PostgreSQL, a single-writer
// UPDATE on SQLite), delivers them at least once to the configured channels
// (a signed webhook, e-mail over SMTP, and the log, which is always on),
// retries failures with exponential back-off and jitter, and marks an event
// dead after the configured number of attempts. A claim is a lease: when the
// replica holding it dies, the lease runs out and another replica retries.
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/telemetry"
	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Event is a notification to deliver.
type Event struct {
	// Type names what happened: "conversation.message", "load.sent_to_driver",
	// "expert.question"... Channels route on it (SMTP routes by type prefix).
	Type string
	// Recipients are the user ids to notify; empty for channel-wide events
	// (the experts' channel).
	Recipients []string
	// Subject is a one-line summary (the e-mail subject).
	Subject string
	// Body is human-readable text.
	Body string
	// Data is the machine-readable payload; it must marshal to JSON.
	Data any
}

// The states of a stored event.
const (
	// StatusPending events wait for (another) delivery attempt.
	StatusPending = "pending"
	// StatusDelivered events reached every channel.
	StatusDelivered = "delivered"
	// StatusDead events failed MaxAttempts times and are no longer tried.
	StatusDead = "dead"
)

// Record is an event as stored in platform_outbox.
type Record struct {
	bun.BaseModel `bun:"table:platform_outbox,alias:o"`

	ID         string `bun:"id,pk"`
	Type       string `bun:"type,notnull"`
	Recipients string `bun:"recipients,notnull"` // JSON array of user ids
	Subject    string `bun:"subject,notnull"`
	Body       string `bun:"body,notnull"`
	Data       string `bun:"data,notnull"` // JSON
	Status     string `bun:"status,notnull"`
	// Attempts counts claims: it grows when a dispatcher takes the event, so an
	// event that kills its process every time still reaches the dead state.
	Attempts     int        `bun:"attempts,notnull"`
	DueAt        time.Time  `bun:"due_at,notnull"`
	ClaimedUntil *time.Time `bun:"claimed_until"`
	ClaimedBy    string     `bun:"claimed_by,notnull"`
	// DoneChannels lists (comma separated) the channels that already took the
	// event, so a retry only repeats the channels that failed.
	DoneChannels string     `bun:"done_channels,notnull"`
	LastError    string     `bun:"last_error,notnull"`
	CreatedAt    time.Time  `bun:"created_at,notnull"`
	DeliveredAt  *time.Time `bun:"delivered_at"`
	// TraceContext is the trace context of the enqueuing request
	// (telemetry.Inject): the delivery span continues that trace.
	TraceContext string `bun:"trace_context,notnull"`
}

// RecipientList decodes the stored recipients.
func (r *Record) RecipientList() []string {
	var out []string
	if err := json.Unmarshal([]byte(r.Recipients), &out); err != nil {
		return nil
	}
	return out
}

// Notification is what a channel delivers: the stored event in its public shape.
// It is also the JSON body of the webhook.
type Notification struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Recipients   []string        `json:"recipients"`
	Subject      string          `json:"subject"`
	Body         string          `json:"body"`
	Data         json.RawMessage `json:"data"`
	CreatedAtUTC string          `json:"createdAtUTC"`
	// Attempt is the delivery attempt (1 for the first); it travels in a header,
	// not in the body, so every attempt sends the same signed body.
	Attempt int `json:"-"`
}

// Notification returns the record in the shape channels deliver.
func (r *Record) Notification() Notification {
	data := json.RawMessage(r.Data)
	if !json.Valid(data) {
		data = json.RawMessage("null")
	}
	recipients := r.RecipientList()
	if recipients == nil {
		recipients = []string{}
	}
	return Notification{
		ID: r.ID, Type: r.Type, Recipients: recipients, Subject: r.Subject, Body: r.Body, Data: data,
		CreatedAtUTC: r.CreatedAt.UTC().Format(time.RFC3339), Attempt: r.Attempts,
	}
}

// Enqueue writes the event in the caller's transaction (idb is the bun.Tx of
// the change, inside db.InTx), so it is delivered if and only if the change
// commits. Once the transaction commits, the dispatchers running in this
// process wake up and deliver it at once, not at their next poll.
func Enqueue(ctx context.Context, idb bun.IDB, e Event) error {
	rec, err := newRecord(e, time.Now().UTC())
	if err != nil {
		return err
	}
	rec.TraceContext = telemetry.Inject(ctx)
	if err := insert(ctx, idb, rec); err != nil {
		return err
	}
	db.AfterCommit(ctx, wakeRunning)
	return nil
}

// EnqueueAll writes several events in the caller's transaction in a few
// multi-row statements (a listing that raises hundreds of alerts), with the
// same guarantees as Enqueue.
func EnqueueAll(ctx context.Context, idb bun.IDB, es []Event) error {
	if len(es) == 0 {
		return nil
	}
	now := time.Now().UTC()
	recs := make([]*Record, len(es))
	for i, e := range es {
		rec, err := newRecord(e, now)
		if err != nil {
			return err
		}
		rec.TraceContext = telemetry.Inject(ctx)
		recs[i] = rec
	}
	const chunk = 500
	for start := 0; start < len(recs); start += chunk {
		part := recs[start:min(start+chunk, len(recs))]
		if _, err := idb.NewInsert().Model(&part).Exec(ctx); err != nil {
			return err
		}
	}
	db.AfterCommit(ctx, wakeRunning)
	return nil
}

func newRecord(e Event, now time.Time) (*Record, error) {
	typ := strings.TrimSpace(e.Type)
	if typ == "" {
		return nil, errors.New("outbox: event type is required")
	}
	recipients := make([]string, 0, len(e.Recipients))
	seen := map[string]bool{}
	for _, r := range e.Recipients {
		if r = strings.TrimSpace(r); r != "" && !seen[r] {
			seen[r] = true
			recipients = append(recipients, r)
		}
	}
	rj, err := json.Marshal(recipients)
	if err != nil {
		return nil, fmt.Errorf("outbox: recipients: %w", err)
	}
	data, err := json.Marshal(e.Data)
	if err != nil {
		return nil, fmt.Errorf("outbox: data of %s is not JSON: %w", typ, err)
	}
	return &Record{
		ID: uuid.Must(uuid.NewV7()).String(), Type: typ, Recipients: string(rj), Subject: e.Subject, Body: e.Body,
		Data: string(data), Status: StatusPending, DueAt: now, CreatedAt: now,
	}, nil
}

// Filter selects stored events for List.
type Filter struct {
	// Type, when set, keeps events of that type only.
	Type string
	// Status, when set, keeps events in that state only.
	Status string
	// Limit caps the answer (default 100).
	Limit int
}

// List answers stored events, newest first: for operators and tests.
func List(ctx context.Context, db bun.IDB, f Filter) ([]Record, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	return list(ctx, db, f)
}

// Get answers one stored event, or sql.ErrNoRows.
func Get(ctx context.Context, db bun.IDB, id string) (*Record, error) {
	return get(ctx, db, id)
}
