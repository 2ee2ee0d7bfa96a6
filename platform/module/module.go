// Package module defines what a domain module is to the platform: a name, a
// version, its migrations, its OpenAPI document and its routes. cmd fills a
// list of them and the app serves them side by side.
package module

import (
	"context"
	"github.com/agritrade/api/platform/tabular"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/bus"
	"github.com/agritrade/api/platform/cache"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/events"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/logging"
	"github.com/agritrade/api/platform/ratelimit"
	"github.com/agritrade/api/platform/telemetry"
	"github.com/gin-gonic/gin"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// Module is one independently versioned domain module.
type Module interface {
	// Name is the module's path segment and log name: "system".
	Name() string
	// Version is the module's semantic version, from its version.go.
	Version() string
	// Migrations are the module's own, run with its own migrations table.
	Migrations() (*migrate.Migrations, error)
	// OpenAPI is the module's OpenAPI 3 document (YAML).
	OpenAPI() []byte
	// Mount binds the module's routes.
	Mount(r Routes)
}

// Routes is where a module binds its routes.
type Routes struct {
	// API is /<name>/v<major>, with the module's version header and logger.
	// Authentication has run: use auth.RequireAuth or auth.RequireRole per route.
	API *gin.RouterGroup
	// Root is the engine root, for the few routes outside the module prefix (/s/{code}).
	Root gin.IRouter
}

// Seeder is a module that fills reference data after migrating.
type Seeder interface {
	Seed(ctx context.Context) error
}

// Runner is a module with background work that runs until ctx ends.
type Runner interface {
	Run(ctx context.Context) error
}

// Deps is what the platform hands a module's New.
type Deps struct {
	Config *config.Config
	DB     *bun.DB
	Log    *logging.Module
	Auth   *auth.Service
	Bus    bus.Bus
	// Files stores uploads and resolves the file references of requests.
	Files *filestore.Service
	// RateLimit limits public routes per client IP (ratelimit.Middleware);
	// in process, or in Redis when cache.backend is redis.
	RateLimit ratelimit.Limiter
	// Cache is the shared cache (memory or Redis per cache.backend); its
	// removals reach every replica.
	Cache cache.Cache
	// Tracing instruments outgoing HTTP calls (Tracing.Transport); nil is off.
	Tracing *telemetry.Tracing
	// Events is this replica's hub of live event streams.
	Events *events.Hub
	// Imports limits the spreadsheet imports in flight on this replica
	// (imports.max_in_flight); nil admits all.
	Imports *tabular.Gate
}
