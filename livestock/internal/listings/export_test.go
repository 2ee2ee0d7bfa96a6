package listings

import (
	"context"
	"net/url"

	"github.com/uptrace/bun"
)

// SaveSearchesForBench stores saved searches of the given owners and queries
// in bulk (the benchmark's 100,000), indexed as CreateSavedSearch indexes them.
func SaveSearchesForBench(ctx context.Context, bdb *bun.DB, owners []string, queries []url.Values, newID func() string) error {
	rows := make([]savedSearchRow, 0, len(queries))
	var cells []savedCellRow
	for i, q := range queries {
		sr, err := ParseSearch(queryOf(q))
		if err != nil {
			return err
		}
		r := savedSearchRow{ID: newID(), UserID: owners[i], Orgs: "[]", Name: "bench", Query: q.Encode(), Body: "{}"}
		for _, k := range indexKeys(sr.Filter) {
			k.SearchID = r.ID
			cells = append(cells, k)
		}
		rows = append(rows, r)
	}
	return NewStore(bdb).InTx(ctx, func(ctx context.Context, tx *Store) error {
		return tx.InsertSavedSearches(ctx, rows, cells)
	})
}

// CreateActive stores an active listing and, when match is set, matches it
// against the saved searches in the same transaction, as Create does; it
// answers the alerts raised.
func (s *Service) CreateActive(ctx context.Context, l *Listing, match bool) (int, error) {
	n := 0
	err := s.store.InTx(ctx, func(ctx context.Context, tx *Store) error {
		if err := tx.Insert(ctx, l); err != nil {
			return err
		}
		if !match {
			return nil
		}
		var err error
		n, err = s.alertNewlyActive(ctx, tx, l)
		return err
	})
	return n, err
}
