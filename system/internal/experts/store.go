package experts

import (
	"context"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/outbox"
	"github.com/uptrace/bun"
)

// requestRow is a stored expert request.
type requestRow struct {
	bun.BaseModel `bun:"table:system_expert_requests,alias:r"`

	ID               string    `bun:"id,pk"`
	Kind             string    `bun:"kind,notnull"`
	Status           string    `bun:"status,notnull"`
	Question         string    `bun:"question,notnull"`
	Files            string    `bun:"files,notnull"` // JSON array of canonical file references
	UserID           string    `bun:"user_id,notnull"`
	UserName         string    `bun:"user_name,notnull"`
	OrganisationID   string    `bun:"organisation_id,notnull"`
	OrganisationName string    `bun:"organisation_name,notnull"`
	CreatedAt        time.Time `bun:"created_at,notnull"`
}

// store holds the SQL of expert requests over a db.Conn: the pool, or within InTx one
// transaction.
type store struct{ db.Conn }

func newStore(bdb *bun.DB) store { return store{db.NewConn(bdb)} }

// InTx runs fn with the store bound to one transaction (db.Conn.InTx).
func (s store) InTx(ctx context.Context, fn func(ctx context.Context, tx store) error) error {
	return s.Conn.InTx(ctx, func(ctx context.Context, c db.Conn) error { return fn(ctx, store{c}) })
}

func (s store) insert(ctx context.Context, row *requestRow) error {
	_, err := s.IDB.NewInsert().Model(row).Exec(ctx)
	return err
}

// get answers a stored request (tests and operators).
func (s store) get(ctx context.Context, id string) (*requestRow, error) {
	row := new(requestRow)
	if err := s.IDB.NewSelect().Model(row).Where("r.id = ?", id).Scan(ctx); err != nil {
		return nil, err
	}
	return row, nil
}

// Enqueue adds a notification to the outbox in the store's transaction.
func (s store) Enqueue(ctx context.Context, ev outbox.Event) error {
	return outbox.Enqueue(ctx, s.IDB, ev)
}
