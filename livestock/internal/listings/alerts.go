package listings

import (
	"context"
	"time"

	"github.com/agritrade/api/platform/db"
)

// Saved-search alerts are matched after the listing's own transaction, not
// inside it. The create (or publish) only queues the listing, in its
// transaction, so no activation is lost; the alerts runner matches it against
// the searches outside any write and records the alerts, removing the queue
// row in the same transaction. Matching many searches thus never holds the
// write (on SQLite, every other writer) nor slows the seller's request, and
// an alert is still recorded once per (search, listing): the alert insert
// skips pairs already alerted, so a listing matched twice (a replica that
// died before removing its row, two replicas at once) alerts nobody twice.

// alertBatch is how many queued listings one pass reads.
const alertBatch = 50

// alertPoll is how often the runner looks for listings queued by other
// replicas (its own wake it).
const alertPoll = time.Second

// alertGather is how long the runner lets the queue fill after a wake before
// it matches: under a stream of creates, one pass (its reads and its
// dequeuing transaction) then serves every listing queued meanwhile, where a
// pass per listing was 13% of a create's CPU in a profile. An alert tells of
// stock someone may travel to see; a tenth of a second is nothing to it.
const alertGather = 100 * time.Millisecond

// queueAlerts queues a listing that has just become active (in tx) and wakes
// this replica's runner once tx commits.
func (s *Service) queueAlerts(ctx context.Context, tx *Store, l *Listing) error {
	if err := tx.QueueAlert(ctx, l.ID, s.now()); err != nil {
		return err
	}
	db.AfterCommit(ctx, s.wakeAlerts)
	return nil
}

func (s *Service) wakeAlerts() {
	select {
	case s.alertWake <- struct{}{}:
	default:
	}
}

// RunAlerts matches queued listings until ctx ends (module.Runner).
func (s *Service) RunAlerts(ctx context.Context) error {
	tick := time.NewTicker(alertPoll)
	defer tick.Stop()
	for {
		if err := s.MatchQueued(ctx); err != nil && ctx.Err() == nil {
			s.log.WithError(err).Warn("matching new listings against saved searches failed; trying again")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.alertWake:
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(alertGather):
			}
		case <-tick.C:
		}
	}
}

// MatchQueued matches every queued listing, oldest first, a batch at a time,
// and answers when the queue is empty (or on the first error).
func (s *Service) MatchQueued(ctx context.Context) error {
	for {
		queued, err := s.store.QueuedAlerts(ctx, alertBatch)
		if err != nil {
			return err
		}
		if len(queued) == 0 {
			return nil
		}
		if err := s.matchBatch(ctx, queued); err != nil {
			return err
		}
	}
}

// matchBatch matches the queued listings that are still active (one closed
// or hidden meanwhile alerts nobody), reading outside any write, then records
// every alert and dequeues the batch in one transaction. Under a burst of
// creates the queue fills while they run, so that write and the check for
// any saved search at all are paid once per batch, not per listing.
func (s *Service) matchBatch(ctx context.Context, ids []string) error {
	type hit struct {
		l       *Listing
		matched []savedSearchRow
	}
	var hits []hit
	anySearch, err := s.store.AnySavedSearch(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if !anySearch {
			break
		}
		l, err := s.store.Get(ctx, id, "", false)
		if err != nil {
			return err
		}
		if l == nil || l.Status != StatusActive {
			continue
		}
		matched, err := s.matchNewlyActive(ctx, s.store, l)
		if err != nil {
			return err
		}
		if len(matched) > 0 {
			hits = append(hits, hit{l: l, matched: matched})
		}
	}
	return s.store.InTx(ctx, func(ctx context.Context, tx *Store) error {
		for _, h := range hits {
			if _, err := s.alert(ctx, tx, h.matched, h.l); err != nil {
				return err
			}
		}
		return tx.DequeueAlerts(ctx, ids)
	})
}
