package filestore

import (
	"context"

	"github.com/agritrade/api/platform/auth"
)

// Records answers, in one query, the active files among ids that p may read,
// by id; the others are missing from the map. It serves callers that need more
// than the canonical Ref of files they have resolved (the content type of the
// files of a grain-sample request), without a query per file.
func (s *Service) Records(ctx context.Context, p *auth.Principal, ids []string) (map[string]*Record, error) {
	found, err := s.store.getMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	for id, rec := range found {
		if rec.Status != StatusActive || !rec.ReadableBy(p) {
			delete(found, id)
			continue
		}
		rec.URL = s.urlOf(rec.ID)
	}
	return found, nil
}
