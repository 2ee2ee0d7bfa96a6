// Package app composes the platform and the modules into one server: it opens
// the shared parts (database, loggers, auth, bus, settings), migrates, mounts
// the platform routes and every module's routes, and runs it all until shutdown.
package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/bus"
	"github.com/agritrade/api/platform/cache"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/events"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/idempotency"
	"github.com/agritrade/api/platform/logging"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/outbox"
	"github.com/agritrade/api/platform/procs"
	"github.com/agritrade/api/platform/ratelimit"
	"github.com/agritrade/api/platform/settings"
	"github.com/agritrade/api/platform/tabular"
	"github.com/agritrade/api/platform/telemetry"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"
)

// PlatformName names the platform's logger and migration set.
const PlatformName = "platform"

// Platform holds the shared parts every module receives.
type Platform struct {
	Config   *config.Config
	DB       *bun.DB
	Logs     *logging.Registry
	Log      *logging.Module
	Auth     *auth.Service
	Bus      bus.Bus
	Cache    cache.Cache
	Settings *settings.Service
	Files    *filestore.Service
	Metrics  *httpx.Metrics
	Redis    *redis.Client
	// Outbox delivers the notifications features enqueue (outbox.Enqueue).
	Outbox *outbox.Dispatcher
	// RateLimit is the per-client-IP limiter of public routes.
	RateLimit ratelimit.Limiter
	// Tracing is OpenTelemetry tracing; nil when off (no otel.endpoint).
	Tracing *telemetry.Tracing
	// Events feeds this replica's live event streams (events.Append).
	Events *events.Hub
	// Imports limits the imports in flight on this replica.
	Imports *tabular.Gate
	// Idempotency keeps the answers of writes sent with Idempotency-Key.
	Idempotency *idempotency.Keeper
	closers     []func() error
}

// Options tune Open.
type Options struct {
	// LogOutput receives every log line; stderr when nil.
	LogOutput io.Writer
	// DB, when set, is used instead of opening cfg.DB.DSN (tests).
	DB *bun.DB
	// Tracing, when set, is used instead of the one otel.* configures (tests
	// record spans in memory with it).
	Tracing *telemetry.Tracing
}

// Open connects the shared parts.
func Open(ctx context.Context, cfg *config.Config, o Options) (*Platform, error) {
	out := o.LogOutput
	if out == nil {
		out = os.Stderr
	}
	logs, err := logging.NewRegistry(out, cfg.Log.Format, cfg.Log.Level)
	if err != nil {
		return nil, err
	}
	p := &Platform{Config: cfg, Logs: logs, Log: logs.Module(PlatformName), Metrics: httpx.NewMetrics()}
	if err := p.applyConfiguredLogs(); err != nil {
		return nil, err
	}
	p.Tracing = o.Tracing
	if p.Tracing == nil {
		if p.Tracing, err = telemetry.Open(ctx, cfg.Otel, Version); err != nil {
			return nil, err
		}
		// Closed last: the spans of the shutdown itself are flushed too.
		p.closers = append(p.closers, func() error {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return p.Tracing.Shutdown(sctx)
		})
	}
	if p.Tracing.Enabled() {
		p.Log.Component("telemetry").WithField("endpoint", telemetry.Endpoint(cfg.Otel)).Info("tracing on: spans exported over OTLP/HTTP")
	}
	if p.Auth, err = auth.New(cfg); err != nil {
		return nil, err
	}
	p.DB = o.DB
	if p.DB == nil {
		dsn := cfg.DB.DSN
		if dsn == "" {
			dsn = db.SQLiteDSN(cfg.DataDir)
		}
		if p.DB, err = db.Open(ctx, dsn, db.Options{MaxOpenConns: cfg.DB.MaxOpenConns}); err != nil {
			return nil, err
		}
		p.closers = append(p.closers, p.DB.Close)
	}
	p.DB = p.Tracing.InstrumentDB(p.DB)
	cfg.Namespaces()
	if needsRedis(cfg) {
		opts, err := redis.ParseURL(cfg.Redis.URL)
		if err != nil {
			return nil, fmt.Errorf("redis.url: %w", err)
		}
		p.Redis = redis.NewClient(opts)
		p.closers = append(p.closers, p.Redis.Close)
		if err := p.Tracing.InstrumentRedis(p.Redis); err != nil {
			_ = p.Close()
			return nil, fmt.Errorf("redis tracing: %w", err)
		}
	}
	if p.Bus, err = p.openBus(); err != nil {
		return nil, err
	}
	p.closers = append(p.closers, p.Bus.Close)
	if p.Cache, err = cache.Open(cfg.Cache, p.Redis, p.Bus, p.Log.Component("cache")); err != nil {
		return nil, err
	}
	p.Settings = settings.New(p.DB, logs, p.Bus)
	if p.Outbox, err = outbox.New(p.DB, cfg.Notify, p.Log.Component("outbox"), p.Tracing); err != nil {
		_ = p.Close()
		return nil, err
	}
	if p.Files, err = filestore.Open(ctx, cfg, p.DB, p.Auth.Signer, p.Log.Component("files")); err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("file store: %w", err)
	}
	// Before the database and Redis close: thumbnails made at upload finish first.
	p.closers = append(p.closers, p.Files.Close)
	p.RateLimit = ratelimit.New(cfg, p.Redis)
	p.registerMetrics(ctx)
	p.Events = events.NewHub(p.DB, p.Bus, p.Log.Component("events"), events.Options{
		Retention: cfg.Events.Retention, Heartbeat: cfg.Events.Heartbeat, MaxPerUser: cfg.Events.MaxPerUser, MaxStreams: cfg.Events.MaxStreams,
	})
	p.Imports = tabular.NewGate(cfg.Imports.MaxInFlight)
	p.Idempotency = idempotency.New(p.DB, idempotency.Options{
		TTL: cfg.Idempotency.TTL, Lease: cfg.Idempotency.Lease, PurgeInterval: cfg.Idempotency.PurgeInterval,
		// Uploads carry their form fields beside the file: a mebibyte more.
		MaxBody: max(cfg.HTTP.MaxBodyKB<<10, cfg.Files.MaxUploadMB<<20+1<<20),
		Log:     p.Log.Component("idempotency"),
	})
	return p, nil
}

func needsRedis(cfg *config.Config) bool {
	return cfg.Cache.Backend == "redis" || cfg.Bus.Backend == "redis"
}

func (p *Platform) openBus() (bus.Bus, error) {
	switch p.Config.Bus.Backend {
	case "memory":
		return bus.NewMemory(), nil
	case "postgres":
		if !db.IsPostgres(p.DB) {
			return nil, fmt.Errorf("bus.backend postgres needs a PostgreSQL database")
		}
		return bus.NewPostgres(p.DB, p.Log.Component("bus")), nil
	case "redis":
		return bus.NewRedis(p.Redis, p.Config.Redis.Prefix+"bus", p.Log.Component("bus")), nil
	default:
		return nil, fmt.Errorf("bus.backend %q: want memory, postgres or redis", p.Config.Bus.Backend)
	}
}

// applyConfiguredLogs sets each module's start-up level and filter from the
// configuration; stored runtime settings override them once the database is up.
func (p *Platform) applyConfiguredLogs() error {
	for name, m := range p.Config.Modules {
		if m.Log.Level == "" && m.Log.Filter == "" {
			continue
		}
		l := p.Logs.Module(name)
		s := l.Settings()
		if m.Log.Level != "" {
			s.Level = m.Log.Level
		}
		s.Filter = m.Log.Filter
		if err := l.Apply(s); err != nil {
			return fmt.Errorf("modules.%s.log: %w", name, err)
		}
	}
	return nil
}

// Deps returns what a module's New receives.
func (p *Platform) Deps(name string) module.Deps {
	return module.Deps{Config: p.Config, DB: p.DB, Log: p.Logs.Module(name), Auth: p.Auth, Bus: p.Bus, Files: p.Files, RateLimit: p.RateLimit, Cache: p.Cache, Events: p.Events, Imports: p.Imports, Tracing: p.Tracing}
}

// Close releases everything Open opened, last first.
func (p *Platform) Close() error {
	var first error
	for i := len(p.closers) - 1; i >= 0; i-- {
		if err := p.closers[i](); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// registerMetrics adds the metrics of the background work and the shared
// parts (outbox, imports, cache, rate limits, database pool, file store) to
// the registry /metrics serves.
func (p *Platform) registerMetrics(ctx context.Context) {
	var cs []prometheus.Collector
	cs = append(cs, p.Outbox.Collectors()...)
	cs = append(cs, tabular.Collectors()...)
	cs = append(cs, cache.Collectors()...)
	cs = append(cs, ratelimit.Collectors()...)
	cs = append(cs, filestore.Collectors()...)
	cs = append(cs, idempotency.Collectors()...)
	cs = append(cs, procs.Collectors()...)
	cs = append(cs, db.Collectors(ctx, p.DB)...)
	p.Metrics.Registry.MustRegister(cs...)
}
