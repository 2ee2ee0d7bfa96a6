// Package system is the System module: files, reference data, locations,
// conversations, expert requests, short links and runtime administration.
package system

import (
	"context"
	"embed"
	"errors"
	"io"
	"io/fs"

	"github.com/agritrade/api/platform/auth"
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
	"github.com/gin-gonic/gin"
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
	// The features, each built by its New and mounted by its Mount.
	refdata    *refdata.Feature
	admin      *admin.Feature
	files      *files.Feature
	messaging  *messaging.Feature
	experts    *experts.Feature
	shortlinks *shortlinks.Feature
	locations  *locations.Feature
	features   []feature
	// err keeps what the feature constructors refused (a configuration
	// error such as an unknown locations.provider) until Seed reports it at
	// start-up; the features that were built still mount.
	err error
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
	var err1, err2, err3, err4, err5, err6, err7 error
	m.refdata, err1 = refdata.New(refdata.Deps{DB: deps.DB, Cache: deps.Cache, Log: deps.Log.Component("refdata"), MaxUpload: deps.Config.Files.MaxUploadMB << 20, Imports: deps.Imports})
	m.add(m.refdata, err1)
	m.admin, err2 = admin.New(admin.Deps{Cache: deps.Cache, Secrets: deps.Auth, Bus: deps.Bus, Log: deps.Log.Component("cache")})
	m.add(m.admin, err2)
	m.files, err3 = files.New(files.Deps{DB: deps.DB, Files: deps.Files, Log: deps.Log, BaseURL: deps.Config.BaseURL, ResumableTTL: deps.Config.Files.ResumableTTL})
	m.add(m.files, err3)
	if err3 == nil {
		// The records' URLs point at this module's download route
		// (files.Handler: GET /files/:id under /system/v1), and the uploads
		// name this module's document kinds.
		deps.Files.ServeAt("/" + Name + "/v1/files")
		deps.Files.AcceptTypes(files.DocumentTypes...)
	}
	m.messaging, err4 = messaging.New(messaging.Deps{DB: deps.DB})
	m.add(m.messaging, err4)
	m.experts, err5 = experts.New(experts.Deps{DB: deps.DB, Files: deps.Files})
	m.add(m.experts, err5)
	m.shortlinks, err6 = shortlinks.New(shortlinks.Deps{Config: deps.Config, DB: deps.DB, Log: deps.Log.Component("shortlinks"), RateLimit: deps.RateLimit})
	m.add(m.shortlinks, err6)
	m.locations, err7 = locations.New(locations.Deps{Config: deps.Config, DB: deps.DB, Log: deps.Log.Component("locations"), Transport: deps.Tracing.Transport(nil), RateLimit: deps.RateLimit})
	m.add(m.locations, err7)
	return m
}

// feature is what every feature's New builds.
type feature interface{ Mount(g gin.IRouter) }

// add keeps a built feature for Mount, or what its constructor refused.
func (m *Module) add(f feature, err error) {
	if err != nil {
		m.err = errors.Join(m.err, err)
		return
	}
	m.features = append(m.features, f)
}

// Mount binds the module's routes: every feature that was built.
func (m *Module) Mount(r module.Routes) {
	for _, f := range m.features {
		f.Mount(r.API)
	}
	if m.deps.Events != nil {
		// The caller's live event stream (platform/events).
		r.API.GET("/events", auth.RequireAuth(), httpx.H(m.deps.Events.Serve))
	}
	if m.shortlinks != nil {
		// The redirect lives at the root (/s/{code}) but is the System module's.
		m.shortlinks.MountRoot(r.Root.Group("", httpx.Scope(m.deps.Log, Version)))
	}
}

// Run removes expired resumable uploads, rows and bytes, every
// files.sweep_interval (module.Runner).
func (m *Module) Run(ctx context.Context) error {
	if m.files == nil {
		<-ctx.Done()
		return nil
	}
	return m.files.Run(ctx, m.deps.Config.Files.SweepInterval)
}

// Seed fills the module's reference data after migrating (module.Seeder):
// commodities and countries (nothing when the database already holds the
// committed version), then the location gazetteer.
func (m *Module) Seed(ctx context.Context) error {
	if m.err != nil {
		return m.err
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
	if m.locations == nil {
		return GazetteerImport{}, m.err
	}
	im := m.locations.NewImporter()
	im.Progress = progress
	return im.Import(ctx, r)
}
