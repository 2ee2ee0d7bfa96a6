package categories

import (
	"context"

	"github.com/uptrace/bun"
)

// Store reads and writes the livestock_categories table.
type Store struct {
	db bun.IDB
}

// NewStore returns a store over db.
func NewStore(db bun.IDB) *Store { return &Store{db: db} }

type row struct {
	bun.BaseModel `bun:"table:livestock_categories"`

	ID       int    `bun:"id,pk"`
	Name     string `bun:"name"`
	Kind     string `bun:"kind"`
	Grp      string `bun:"grp"`
	ParentID *int   `bun:"parent_id"`
	Value    string `bun:"value"`
	Position int    `bun:"position"`
}

func (r row) category() Category {
	return Category{ID: r.ID, Name: r.Name, Kind: Kind(r.Kind), Group: Group(r.Grp), ParentID: r.ParentID, Value: r.Value}
}

// Upsert writes every category (parents first, as given), updating the rows
// that exist: the reference data in the code is authoritative.
func (s *Store) Upsert(ctx context.Context, cats []Category) error {
	rows := make([]row, len(cats))
	for i, c := range cats {
		rows[i] = row{ID: c.ID, Name: c.Name, Kind: string(c.Kind), Grp: string(c.Group), ParentID: c.ParentID, Value: c.Value, Position: i}
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewInsert().Model(&rows).
			On("CONFLICT (id) DO UPDATE").
			Set("name = EXCLUDED.name").
			Set("kind = EXCLUDED.kind").
			Set("grp = EXCLUDED.grp").
			Set("parent_id = EXCLUDED.parent_id").
			Set("value = EXCLUDED.value").
			Set("position = EXCLUDED.position").
			Exec(ctx)
		return err
	})
}

// List answers the categories in tree order, of one kind when kind is not empty.
func (s *Store) List(ctx context.Context, kind Kind) ([]Category, error) {
	var rows []row
	q := s.db.NewSelect().Model(&rows).Order("position")
	if kind != "" {
		q.Where("kind = ?", string(kind))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]Category, len(rows))
	for i, r := range rows {
		out[i] = r.category()
	}
	return out, nil
}

// KindsOf answers the kind of each of ids that exists.
func (s *Store) KindsOf(ctx context.Context, ids []int) (map[int]Kind, error) {
	out := map[int]Kind{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []row
	if err := s.db.NewSelect().Model(&rows).Column("id", "kind").Where("id IN (?)", bun.List(ids)).Scan(ctx); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ID] = Kind(r.Kind)
	}
	return out, nil
}
