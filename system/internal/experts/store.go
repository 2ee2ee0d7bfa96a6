package experts

import (
	"context"
	"time"

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

// store holds the feature's SQL.
type store struct{}

func (store) insert(ctx context.Context, idb bun.IDB, row *requestRow) error {
	_, err := idb.NewInsert().Model(row).Exec(ctx)
	return err
}

// get answers a stored request (tests and operators).
func (store) get(ctx context.Context, idb bun.IDB, id string) (*requestRow, error) {
	row := new(requestRow)
	if err := idb.NewSelect().Model(row).Where("r.id = ?", id).Scan(ctx); err != nil {
		return nil, err
	}
	return row, nil
}
