package shortlinks

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/uptrace/bun"
)

// linkRow is a stored short link.
type linkRow struct {
	bun.BaseModel `bun:"table:system_short_links,alias:l"`

	ID          string     `bun:"id,pk"`
	Code        string     `bun:"code,notnull"`
	InputHash   string     `bun:"input_hash,notnull"`
	Template    string     `bun:"template,notnull"`
	URL         string     `bun:"url,notnull"`
	Source      string     `bun:"source,notnull"`
	Campaign    string     `bun:"campaign,notnull"`
	Target      string     `bun:"target,notnull"`
	CreatedBy   string     `bun:"created_by,notnull"`
	CreatedAt   time.Time  `bun:"created_at,notnull"`
	VisitCount  int64      `bun:"visit_count,notnull"`
	LastVisitAt *time.Time `bun:"last_visit_at"`
}

// visitRow is one counted redirect.
type visitRow struct {
	bun.BaseModel `bun:"table:system_short_link_visits,alias:v"`

	ID           string    `bun:"id,pk"`
	LinkID       string    `bun:"link_id,notnull"`
	VisitedAt    time.Time `bun:"visited_at,notnull"`
	ReferrerHost string    `bun:"referrer_host,notnull"`
	AgentClass   string    `bun:"agent_class,notnull"`
}

// store holds the SQL of short links over a db.Conn: the pool, or within InTx one
// transaction.
type store struct{ db.Conn }

func newStore(bdb *bun.DB) store { return store{db.NewConn(bdb)} }

// InTx runs fn with the store bound to one transaction (db.Conn.InTx).
func (s store) InTx(ctx context.Context, fn func(ctx context.Context, tx store) error) error {
	return s.Conn.InTx(ctx, func(ctx context.Context, c db.Conn) error { return fn(ctx, store{c}) })
}

// byColumn answers the link whose column equals value, nil when none.
func (s store) byColumn(ctx context.Context, column, value string) (*linkRow, error) {
	row := new(linkRow)
	err := s.IDB.NewSelect().Model(row).Where("? = ?", bun.Ident("l."+column), value).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return row, err
}

func (s store) byHash(ctx context.Context, hash string) (*linkRow, error) {
	return s.byColumn(ctx, "input_hash", hash)
}

func (s store) byCode(ctx context.Context, code string) (*linkRow, error) {
	return s.byColumn(ctx, "code", code)
}

func (s store) insert(ctx context.Context, row *linkRow) error {
	_, err := s.IDB.NewInsert().Model(row).Exec(ctx)
	return err
}

// countVisit stores a visit and bumps the link's counter.
func (s store) countVisit(ctx context.Context, v *visitRow) error {
	if _, err := s.IDB.NewInsert().Model(v).Exec(ctx); err != nil {
		return err
	}
	_, err := s.IDB.NewUpdate().Model((*linkRow)(nil)).
		Set("visit_count = visit_count + 1").Set("last_visit_at = ?", v.VisitedAt).
		Where("id = ?", v.LinkID).Exec(ctx)
	return err
}

// Count is one group of a visit breakdown.
type Count struct {
	Key   string `bun:"k"`
	Count int64  `bun:"n"`
}

// breakdown counts a link's visits grouped by a column, largest first.
func (s store) breakdown(ctx context.Context, linkID, column string, limit int) ([]Count, error) {
	var out []Count
	err := s.IDB.NewSelect().Model((*visitRow)(nil)).
		ColumnExpr("? AS k", bun.Ident("v."+column)).ColumnExpr("COUNT(*) AS n").
		Where("v.link_id = ?", linkID).GroupExpr("?", bun.Ident("v."+column)).
		OrderExpr("n DESC, k ASC").Limit(int64(limit)).Scan(ctx, &out)
	return out, err
}
