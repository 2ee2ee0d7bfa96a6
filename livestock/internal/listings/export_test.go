package listings

import (
	"context"
	"net/url"
	"time"

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

// InsertListing writes a new listing as Create's transaction does.
func (s *Store) InsertListing(ctx context.Context, l *Listing) error {
	f, err := flatten(l)
	if err != nil {
		return err
	}
	return s.Insert(ctx, f)
}

// CreateActive stores an active listing and, when match is set, matches it
// against the saved searches in the same transaction, as Create does; it
// answers the alerts raised.
func (s *Service) CreateActive(ctx context.Context, l *Listing, match bool) (int, error) {
	n := 0
	err := s.store.InTx(ctx, func(ctx context.Context, tx *Store) error {
		if err := tx.InsertListing(ctx, l); err != nil {
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

// MatchPhases is what matching one new listing cost, phase by phase.
type MatchPhases struct {
	Candidates, Matched, Alerts int
	Candidate, Filter, Write    time.Duration
}

// CreateAndMatch stores an active listing, then matches it as the alerts
// runner does (candidates and filter outside any write, the alerts with their
// notifications and events in one transaction), timing each phase.
func (s *Service) CreateAndMatch(ctx context.Context, l *Listing) (MatchPhases, error) {
	var p MatchPhases
	if err := s.store.InTx(ctx, func(ctx context.Context, tx *Store) error { return tx.InsertListing(ctx, l) }); err != nil {
		return p, err
	}
	t0 := time.Now()
	cands, err := s.store.SavedSearchCandidates(ctx, candidateKey(l), l.UserID)
	if err != nil {
		return p, err
	}
	t1 := time.Now()
	matched, err := filterCandidates(ctx, s.store, l, cands)
	if err != nil {
		return p, err
	}
	t2 := time.Now()
	err = s.store.InTx(ctx, func(ctx context.Context, tx *Store) error {
		p.Alerts, err = s.alert(ctx, tx, matched, l)
		return err
	})
	p.Candidates, p.Matched = len(cands), len(matched)
	p.Candidate, p.Filter, p.Write = t1.Sub(t0), t2.Sub(t1), time.Since(t2)
	return p, err
}

// SetTopNMax sets the deepest page chosen in Go (topNMax) for a test: 0 has
// every search around a point choose its page in SQL, the reference the Go
// page is compared with. The restore function puts the value back.
func SetTopNMax(n int) (restore func()) {
	old := topNMax
	topNMax = n
	return func() { topNMax = old }
}
