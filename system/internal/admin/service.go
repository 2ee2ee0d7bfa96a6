package admin

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/bus"
	"github.com/agritrade/api/platform/cache"
	"github.com/agritrade/api/platform/logging"
	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
)

// TopicReloadSecrets is the bus topic that makes every replica reload its secrets.
const TopicReloadSecrets = "system.secrets.reload"

// SecretsReloader reloads secrets kept in memory (the auth service's JWKS keys).
type SecretsReloader interface {
	ReloadKeys(ctx context.Context) error
}

// Service clears caches and reloads secrets on every replica.
type Service struct {
	cache   cache.Cache
	secrets SecretsReloader
	bus     bus.Bus
	id      string
	log     logrus.FieldLogger
}

// NewService makes the service and subscribes to other replicas' reload requests.
func NewService(c cache.Cache, secrets SecretsReloader, b bus.Bus, log logrus.FieldLogger) *Service {
	s := &Service{cache: c, secrets: secrets, bus: b, id: uuid.NewString(), log: log}
	b.Subscribe(TopicReloadSecrets, s.onReload)
	return s
}

type reloadMessage struct {
	Origin string `json:"origin"`
}

// Clear carries out a validated request and says what it did. Secrets reload
// first: if the identity provider is down the request fails before anything
// changed. Cache removals reach every replica through the cache itself (a
// shared Redis, or the broadcast of the memory backend); the count is this
// replica's.
func (s *Service) Clear(ctx context.Context, c Clear) (string, error) {
	if c.Secrets {
		if err := s.secrets.ReloadKeys(ctx); err != nil {
			return "", apierr.Unavailable(err, "the identity provider's key set")
		}
		payload, err := json.Marshal(reloadMessage{Origin: s.id})
		if err != nil {
			return "", apierr.Internal(err)
		}
		if err := s.bus.Publish(ctx, TopicReloadSecrets, payload); err != nil {
			return "", apierr.Internal(fmt.Errorf("broadcast secrets reload: %w", err))
		}
	}
	n := 0
	if c.Flush {
		m, err := s.cache.Flush(ctx)
		if err != nil {
			return "", cacheError(err)
		}
		n = m
	} else {
		if len(c.Keys) > 0 {
			m, err := s.cache.Delete(ctx, c.Keys...)
			if err != nil {
				return "", cacheError(err)
			}
			n += m
		}
		for _, p := range c.Prefixes {
			m, err := s.cache.DeletePrefix(ctx, p)
			if err != nil {
				return "", cacheError(err)
			}
			n += m
		}
	}
	logging.Ctx(ctx, s.log).WithField("removed", n).WithField("flush", c.Flush).WithField("keys", len(c.Keys)).
		WithField("prefixes", len(c.Prefixes)).WithField("secrets", c.Secrets).Info("cache cleared")
	msg := fmt.Sprintf("removed %d cache %s", n, plural(n, "entry", "entries"))
	if c.Secrets {
		msg += " and reloaded secrets"
	}
	return msg + "; every replica applies the same clear", nil
}

func (s *Service) onReload(ctx context.Context, payload []byte) {
	var m reloadMessage
	if err := json.Unmarshal(payload, &m); err != nil || m.Origin == s.id {
		return // our own request was carried out already
	}
	if err := s.secrets.ReloadKeys(ctx); err != nil {
		s.log.WithError(err).Warn("could not reload secrets at another replica's request")
	}
}

func cacheError(err error) error { return apierr.Unavailable(err, "the cache") }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
