// Package system is the System module: files, reference data, locations,
// conversations, expert requests, short links and runtime administration.
package system

import (
	"context"
	"embed"
	"github.com/agritrade/api/platform/auth"
	"io"
	"io/fs"

	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/system/internal/admin"
	"github.com/agritrade/api/system/internal/experts"
	"github.com/agritrade/api/system/internal/files"
	"github.com/agritrade/api/system/internal/locations"
	"github.com/agritrade/api/system/internal/locations/gazetteer"
	"github.com/agritrade/api/system/internal/messaging"
	"github.com/agritrade/api/system/internal/refdata"
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
	deps    module.Deps
	refdata *refdata.Service
	admin   *admin.Service
	// locations answers the location lookups; locationsErr keeps a
	// configuration error until Seed reports it at start-up.
	locations    *locations.Service
	locationsErr error
	// shortlinks serves short URLs; shortlinksErr keeps a configuration error
	// (templates, allow-list) until Seed reports it at start-up.
	shortlinks    *shortlinks.Service
	shortlinksErr error
	// uploads keeps resumable uploads (tus) and sweeps the expired ones.
	uploads *files.Resumable
}

// New builds the module over the platform's shared parts.
func New(deps module.Deps) *Module {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	m := &Module{
		Base:    module.Base{ModuleName: Name, ModuleVersion: Version, MigrationFS: sub, Document: openapiYAML},
		deps:    deps,
		refdata: refdata.NewService(refdata.NewStore(deps.DB), deps.Cache, deps.Log.Component("refdata")),
		admin:   admin.NewService(deps.Cache, deps.Auth, deps.Bus, deps.Log.Component("cache")),
	}
	m.locations, m.locationsErr = locations.NewService(deps.Config, deps.DB, deps.Log.Component("locations"), deps.Tracing.Transport(nil))
	m.shortlinks, m.shortlinksErr = shortlinks.NewService(deps.DB, deps.Config, deps.Log.Component("shortlinks"))
	if deps.Files != nil {
		// The records' URLs point at this module's download route
		// (files.Handler.Mount: GET /files/:id under /system/v1).
		deps.Files.ServeAt("/" + Name + "/v1/files")
		m.uploads = files.NewResumable(deps.DB, deps.Files, deps.Config.Files.ResumableTTL, deps.Log.Component("uploads"))
	}
	return m
}

// Mount binds the module's routes.
func (m *Module) Mount(r module.Routes) {
	refdata.Mount(r.API, m.refdata, m.deps.Config.Files.MaxUploadMB<<20, m.deps.Imports)
	admin.Mount(r.API, m.admin)
	files.New(m.deps.Files, m.deps.Log.Component("files")).Mount(r.API)
	if m.uploads != nil {
		files.NewUploads(m.uploads, m.deps.Config.BaseURL).Mount(r.API)
	}
	messaging.Mount(r.API, messaging.NewService(m.deps.DB))
	if m.deps.Events != nil {
		// The caller's live event stream (platform/events).
		r.API.GET("/events", auth.RequireAuth(), httpx.H(m.deps.Events.Serve))
	}
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

// Run removes expired resumable uploads, rows and bytes, every
// files.sweep_interval (module.Runner).
func (m *Module) Run(ctx context.Context) error {
	if m.uploads == nil {
		<-ctx.Done()
		return nil
	}
	return m.uploads.Run(ctx, m.deps.Config.Files.SweepInterval)
}

// Seed fills the module's reference data after migrating (module.Seeder):
// commodities and countries (nothing when the database already holds the
// committed version), then the location gazetteer.
func (m *Module) Seed(ctx context.Context) error {
	if m.shortlinksErr != nil {
		return m.shortlinksErr
	}
	if m.locationsErr != nil {
		return m.locationsErr
	}
	if err := m.refdata.Seed(ctx); err != nil {
		return err
	}
	return m.locations.Seed(ctx)
}

// LookupCommodity returns the name and default weight unit of a commodity
// item (the integer commodityId of the settings document), for Logistics,
// which declares the same method in an interface of its own.
func (m *Module) LookupCommodity(ctx context.Context, id int) (name, unitName string, conversion float64, found bool, err error) {
	return m.refdata.LookupCommodity(ctx, id)
}

// GazetteerImport reports an `agritrade import gazetteer` run.
type GazetteerImport = gazetteer.ImportStats

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
