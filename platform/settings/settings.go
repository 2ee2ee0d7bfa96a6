// Package settings keeps each module's runtime settings (today: logging): it
// validates changes, stores them so restarts keep them, applies them to the
// module's logger and broadcasts them so every replica follows at once.
package settings

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/bus"
	"github.com/agritrade/api/platform/logging"
	"github.com/uptrace/bun"
)

// Topic is the bus topic of settings changes.
const Topic = "settings.logging"

// Document is the body and answer of the admin settings routes.
type Document struct {
	Logging logging.Settings `json:"logging"`
}

// row is the stored form.
type row struct {
	bun.BaseModel `bun:"table:platform_module_settings"`
	Module        string    `bun:"module,pk"`
	LogLevel      string    `bun:"log_level"`
	LogFilter     string    `bun:"log_filter"`
	UpdatedBy     string    `bun:"updated_by"`
	UpdatedAt     time.Time `bun:"updated_at"`
}

type change struct {
	Module string           `json:"module"`
	Value  logging.Settings `json:"value"`
}

// Service owns the settings of every module.
type Service struct {
	db   *bun.DB
	logs *logging.Registry
	bus  bus.Bus
}

// New makes the service and subscribes it to changes from other replicas. A
// change broadcast while this replica's subscription was down is not
// replayed, so the stored settings are reloaded each time it is live again
// (and every minute by Run, for what no reconnect reveals).
func New(db *bun.DB, logs *logging.Registry, b bus.Bus) *Service {
	s := &Service{db: db, logs: logs, bus: b}
	b.Subscribe(Topic, s.onChange)
	b.OnSubscribed(func(ctx context.Context) {
		if err := s.Load(ctx); err != nil && ctx.Err() == nil {
			s.logs.Module("platform").Component("settings").WithError(err).Warn("reload of module settings after a bus reconnect failed")
		}
	})
	return s
}

// Load applies every stored setting; modules without one keep their start-up setting.
func (s *Service) Load(ctx context.Context) error {
	var rows []row
	if err := s.db.NewSelect().Model(&rows).Scan(ctx); err != nil {
		return fmt.Errorf("load module settings: %w", err)
	}
	for _, r := range rows {
		if err := s.logs.Module(r.Module).Apply(logging.Settings{Level: r.LogLevel, Filter: r.LogFilter}); err != nil {
			s.logs.Module("platform").Entry().WithError(err).WithField("target", r.Module).Warn("ignoring stored log settings")
		}
	}
	return nil
}

// Get returns a module's current settings.
func (s *Service) Get(module string) Document {
	return Document{Logging: s.logs.Module(module).Settings()}
}

// Validate checks a requested change against the current settings and returns
// the complete settings it leads to: a missing level or filter keeps its value.
func (s *Service) Validate(module string, in Request) (logging.Settings, error) {
	cur := s.logs.Module(module).Settings()
	var f apierr.Fields
	if in.Logging == nil {
		f.Add("logging", "required", "is required", nil)
		return cur, f.Err()
	}
	next := cur
	if in.Logging.Level != nil {
		next.Level = *in.Logging.Level
		if _, err := logging.ParseLevel(next.Level); err != nil {
			f.Add("logging.level", "enum", "must be one of panic, fatal, error, warn, info, debug, trace", map[string]any{"actual": next.Level})
		}
	}
	if in.Logging.Filter != nil {
		next.Filter = *in.Logging.Filter
		parsed, err := logging.ParseFilter(next.Filter)
		if err != nil {
			f.Add("logging.filter", "format", err.Error(), map[string]any{"actual": next.Filter})
		} else {
			next.Filter = parsed.String()
		}
	}
	if in.Logging.Level == nil && in.Logging.Filter == nil {
		f.Add("logging", "required", "must set level, filter or both", nil)
	}
	return next, f.Err()
}

// Put validates, stores, applies and broadcasts a module's settings.
func (s *Service) Put(ctx context.Context, module, by string, in Request) (Document, error) {
	next, err := s.Validate(module, in)
	if err != nil {
		return Document{}, err
	}
	r := row{Module: module, LogLevel: next.Level, LogFilter: next.Filter, UpdatedBy: by, UpdatedAt: time.Now().UTC()}
	if _, err := s.db.NewInsert().Model(&r).
		On("CONFLICT (module) DO UPDATE").
		Set("log_level = EXCLUDED.log_level, log_filter = EXCLUDED.log_filter, updated_by = EXCLUDED.updated_by, updated_at = EXCLUDED.updated_at").
		Exec(ctx); err != nil {
		return Document{}, apierr.Internal(fmt.Errorf("store module settings: %w", err))
	}
	if err := s.logs.Module(module).Apply(next); err != nil {
		return Document{}, apierr.Internal(err)
	}
	payload, err := json.Marshal(change{Module: module, Value: next})
	if err != nil {
		return Document{}, apierr.Internal(err)
	}
	if err := s.bus.Publish(ctx, Topic, payload); err != nil {
		// Stored and applied here; other replicas pick it up at their next resync.
		s.logs.Module(module).Component("settings").WithError(err).Warn("could not broadcast log settings")
	}
	return s.Get(module), nil
}

func (s *Service) onChange(_ context.Context, payload []byte) {
	var c change
	if err := json.Unmarshal(payload, &c); err != nil || c.Module == "" {
		return
	}
	if err := s.logs.Module(c.Module).Apply(c.Value); err != nil {
		s.logs.Module(c.Module).Component("settings").WithError(err).Warn("ignoring broadcast log settings")
	}
}

// Run reloads the stored settings every interval, so that a replica that missed
// a broadcast (a dropped connection) converges anyway.
func (s *Service) Run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := s.Load(ctx); err != nil && ctx.Err() == nil {
				s.logs.Module("platform").Component("settings").WithError(err).Warn("resync of module settings failed")
			}
		}
	}
}

// Request is the body of PUT /<module>/v1/admin/settings; nil fields keep their value.
type Request struct {
	Logging *struct {
		Level  *string `json:"level"`
		Filter *string `json:"filter"`
	} `json:"logging"`
}
