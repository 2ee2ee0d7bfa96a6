package categories

import (
	"context"
	"fmt"
	"maps"

	"github.com/agritrade/api/platform/apierr"
)

// Service answers the category tree and checks category references.
type Service struct {
	store *Store
}

// NewService returns the service over its store.
func NewService(store *Store) *Service { return &Service{store: store} }

// Seed writes the reference tree into the database (on every start, so that
// new categories of a release appear without a migration).
func (s *Service) Seed(ctx context.Context) error {
	if err := s.store.Upsert(ctx, All()); err != nil {
		return fmt.Errorf("seed listing categories: %w", err)
	}
	return nil
}

// List answers every category, or those of one kind.
func (s *Service) List(ctx context.Context, kind Kind) ([]Category, error) {
	cats, err := s.store.List(ctx, kind)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	return cats, nil
}

// Check tells which of ids are not categories of kind; ids below 1 (items the
// caller already reported) are skipped. The field errors have paths relative to
// the list ("[1]"), for the caller to place under its field.
func (s *Service) Check(ctx context.Context, kind Kind, ids []int) ([]apierr.FieldError, error) {
	wanted := make([]int, 0, len(ids))
	for _, id := range ids {
		if id > 0 {
			wanted = append(wanted, id)
		}
	}
	// The tree is compiled into the binary and seeded on every start, so the
	// ids this release knows are answered from memory (every listing create
	// checks its categories; a query each time was a fifth of its CPU). Only
	// ids unknown to this binary are looked up: a category that a newer
	// release seeded during a rolling update is still found.
	kinds := make(map[int]Kind, len(wanted))
	var unknown []int
	for _, id := range wanted {
		if k, ok := kindOf[id]; ok {
			kinds[id] = k
		} else {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		stored, err := s.store.KindsOf(ctx, unknown)
		if err != nil {
			return nil, err
		}
		maps.Copy(kinds, stored)
	}
	var f apierr.Fields
	for i, id := range ids {
		k, ok := kinds[id]
		switch {
		case id <= 0:
		case !ok:
			f.Index(i).Add("", "not_found", fmt.Sprintf("category %d does not exist (see GET /livestock/v1/categories)", id), map[string]any{"actual": id})
		case k != kind:
			f.Index(i).Add("", "kind", fmt.Sprintf("category %d is a %s category, not %s", id, k, kind), map[string]any{"actual": string(k), "expected": string(kind)})
		}
	}
	return f.List(), nil
}

// kindOf maps the id of every category of the compiled-in tree to its kind.
var kindOf = func() map[int]Kind {
	m := make(map[int]Kind, len(tree))
	for _, c := range tree {
		m[c.ID] = c.Kind
	}
	return m
}()
