// Package system is the System module: files, reference data, locations,
// conversations, expert requests, short links and runtime administration.
package system

import (
	"context"
	"embed"
	"io"
	"io/fs"

	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/system/internal/experts"
	"github.com/agritrade/api/system/internal/files"
	"github.com/agritrade/api/system/internal/locations"
	"github.com/agritrade/api/system/internal/messaging"
	"github.com/agritrade/api/system/internal/shortlinks"
)

// Name is the module's path segment and log name.
const Name = "system"

//go:embed openapi.yaml
var openapiYAML []byte

//go:embed migrations
var migrationFiles embed.FS

// Module is the System module.
type Module struct {
	module.Base
	deps module.Deps
	// locations answers the location lookups; locationsErr keeps a
	// configuration error until Seed reports it at start-up.
	locations    *locations.Service
	locationsErr error
	// shortlinks serves short URLs; shortlinksErr keeps a configuration error
	// (templates, allow-list) until Seed reports it at start-up.
	shortlinks    *shortlinks.Service
	shortlinksErr error
}

// New builds the module over the platform's shared parts.
func New(deps module.Deps) *Module {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	m := &Module{
		Base: module.Base{ModuleName: Name, ModuleVersion: Version, MigrationFS: sub, Document: openapiYAML},
		deps: deps,
	}
	m.locations, m.locationsErr = locations.NewService(deps.Config, deps.DB, deps.Log.Component("locations"))
	m.shortlinks, m.shortlinksErr = shortlinks.NewService(deps.DB, deps.Config, deps.Log.Component("shortlinks"))
	return m
}

// Mount binds the module's routes.
func (m *Module) Mount(r module.Routes) {
	files.New(m.deps.Files, m.deps.Log.Component("files")).Mount(r.API)
	messaging.Mount(r.API, messaging.NewService(m.deps.DB))
	experts.Mount(r.API, experts.NewService(m.deps.DB, m.deps.Files))
	if m.shortlinks != nil {
		// The redirect lives at the root (/s/{code}) but is the System module's.
		root := r.Root.Group("", httpx.Scope(m.deps.Log, Version))
		shortlinks.Mount(r.API, root, m.shortlinks, m.deps.RateLimit)
	}
	if m.locations != nil {
		locations.Mount(r.API, m.locations, m.deps.RateLimit)
	}
}

// Seed fills the module's reference data after migrating (module.Seeder).
func (m *Module) Seed(ctx context.Context) error {
	if m.shortlinksErr != nil {
		return m.shortlinksErr
	}
	if m.locationsErr != nil {
		return m.locationsErr
	}
	return m.locations.Seed(ctx)
}

// GazetteerImport reports an `agritrade import gazetteer` run.
type GazetteerImport = locations.ImportStats

// ImportGazetteer streams a GeoNames dump (places or postal codes, detected
// from its columns) into the location gazetteer, writing a progress line to
// progress (may be nil) every 100 000 lines. The database must be migrated.
func (m *Module) ImportGazetteer(ctx context.Context, r io.Reader, progress io.Writer) (GazetteerImport, error) {
	if m.locationsErr != nil {
		return GazetteerImport{}, m.locationsErr
	}
	im := m.locations.NewImporter()
	im.Progress = progress
	return im.Import(ctx, r)
}
