package cache

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agritrade/api/platform/bus"
	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
)

// Topic is the bus topic of cache invalidations.
const Topic = "cache.invalidate"

// maxMessageBytes keeps one invalidation under the smallest bus payload limit
// (PostgreSQL NOTIFY) with room for the bus envelope.
const maxMessageBytes = 6000

// invalidation is what travels between replicas.
type invalidation struct {
	Origin   string   `json:"o"`
	Keys     []string `json:"k,omitempty"`
	Prefixes []string `json:"p,omitempty"`
	Flush    bool     `json:"f,omitempty"`
}

// Replicated applies every removal locally, then broadcasts it so that each
// other replica removes the same entries from its own cache. Reads and writes
// stay local. Counts are those of this replica.
//
// A broadcast is not replayed to a replica whose subscription was down when
// it went out, so each time this replica's subscription becomes live again
// (bus.OnSubscribed: at start and after every reconnect) it empties its own
// cache: whatever it missed, nothing it holds predates the reconnect. Clears
// are rare and the cache refills from the database, so this costs little;
// a clear generation kept in the database would spare the refill but needs a
// shared counter and a poll for what the bus already tells.
type Replicated struct {
	local Cache
	bus   bus.Bus
	id    string
	log   logrus.FieldLogger
}

// NewReplicated wraps a replica-local cache and subscribes to other replicas'
// invalidations.
func NewReplicated(local Cache, b bus.Bus, log logrus.FieldLogger) *Replicated {
	if log == nil {
		log = logrus.StandardLogger()
	}
	r := &Replicated{local: local, bus: b, id: uuid.NewString(), log: log}
	b.Subscribe(Topic, r.receive)
	b.OnSubscribed(r.resync)
	return r
}

// Local returns the wrapped replica-local cache.
func (r *Replicated) Local() Cache { return r.local }

// Get reads the local cache.
func (r *Replicated) Get(ctx context.Context, key string) ([]byte, bool, error) {
	return r.local.Get(ctx, key)
}

// Set writes the local cache.
func (r *Replicated) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return r.local.Set(ctx, key, value, ttl)
}

// Delete removes keys here and on every other replica.
func (r *Replicated) Delete(ctx context.Context, keys ...string) (int, error) {
	n, err := r.local.Delete(ctx, keys...)
	if err != nil {
		return n, err
	}
	return n, r.broadcast(ctx, invalidation{Keys: keys})
}

// DeletePrefix removes a prefix here and on every other replica.
func (r *Replicated) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	n, err := r.local.DeletePrefix(ctx, prefix)
	if err != nil {
		return n, err
	}
	return n, r.broadcast(ctx, invalidation{Prefixes: []string{prefix}})
}

// Flush empties this cache and every other replica's.
func (r *Replicated) Flush(ctx context.Context) (int, error) {
	n, err := r.local.Flush(ctx)
	if err != nil {
		return n, err
	}
	return n, r.broadcast(ctx, invalidation{Flush: true})
}

// broadcast sends the invalidation, split into messages small enough for every
// bus backend.
func (r *Replicated) broadcast(ctx context.Context, inv invalidation) error {
	inv.Origin = r.id
	for _, part := range split(inv) {
		payload, err := json.Marshal(part)
		if err != nil {
			return err
		}
		if err := r.bus.Publish(ctx, Topic, payload); err != nil {
			return err
		}
	}
	return nil
}

// split cuts the key list into chunks below maxMessageBytes. A single key
// longer than that travels alone (the bus reports it if it is too large).
func split(inv invalidation) []invalidation {
	if len(inv.Keys) == 0 {
		return []invalidation{inv}
	}
	var out []invalidation
	// Prefixes and the flush flag ride with the first chunk.
	cur := invalidation{Origin: inv.Origin, Prefixes: inv.Prefixes, Flush: inv.Flush}
	size := 0
	for _, k := range inv.Keys {
		if size+len(k)+4 > maxMessageBytes && len(cur.Keys) > 0 {
			out = append(out, cur)
			cur = invalidation{Origin: inv.Origin}
			size = 0
		}
		cur.Keys = append(cur.Keys, k)
		size += len(k) + 4
	}
	out = append(out, cur)
	return out
}

// resync empties the local cache after the subscription (re)became live.
func (r *Replicated) resync(ctx context.Context) {
	n, err := r.local.Flush(ctx)
	if err != nil {
		r.log.WithError(err).Warn("could not empty the cache after a bus reconnect")
		return
	}
	if n > 0 {
		r.log.WithField("removed", n).Info("cache emptied: the bus reconnected, clears sent meanwhile may have been missed")
	}
}

// receive applies another replica's invalidation to the local cache. The bus
// also delivers a replica's own messages to it: those were applied already.
func (r *Replicated) receive(ctx context.Context, payload []byte) {
	var inv invalidation
	if err := json.Unmarshal(payload, &inv); err != nil {
		r.log.WithError(err).Warn("dropping a malformed cache invalidation")
		return
	}
	if inv.Origin == r.id {
		return
	}
	clearsReceivedTotal.Inc()
	var err error
	switch {
	case inv.Flush:
		_, err = r.local.Flush(ctx)
	default:
		if len(inv.Keys) > 0 {
			_, err = r.local.Delete(ctx, inv.Keys...)
		}
		for _, p := range inv.Prefixes {
			if err != nil {
				break
			}
			_, err = r.local.DeletePrefix(ctx, p)
		}
	}
	if err != nil {
		r.log.WithError(err).Warn("could not apply a cache invalidation from another replica")
	}
}
