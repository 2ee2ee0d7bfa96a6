// Package system is the System module: files, reference data, locations,
// conversations, expert requests, short links and runtime administration.
package system

import (
	"context"
	"embed"
	"io/fs"

	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/system/internal/admin"
	"github.com/agritrade/api/system/internal/files"
	"github.com/agritrade/api/system/internal/refdata"
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
}

// New builds the module over the platform's shared parts.
func New(deps module.Deps) *Module {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return &Module{
		Base:    module.Base{ModuleName: Name, ModuleVersion: Version, MigrationFS: sub, Document: openapiYAML},
		deps:    deps,
		refdata: refdata.NewService(refdata.NewStore(deps.DB), deps.Cache, deps.Log.Component("refdata")),
		admin:   admin.NewService(deps.Cache, deps.Auth, deps.Bus, deps.Log.Component("cache")),
	}
}

// Seed fills the reference data (module.Seeder); it does nothing when the
// database already holds the committed version.
func (m *Module) Seed(ctx context.Context) error {
	return m.refdata.Seed(ctx)
}

// Mount binds the module's routes.
func (m *Module) Mount(r module.Routes) {
	files.New(m.deps.Files, m.deps.Log.Component("files")).Mount(r.API)
	refdata.Mount(r.API, m.refdata, m.deps.Config.Files.MaxUploadMB<<20)
	admin.Mount(r.API, m.admin)
}

// LookupCommodity returns the name and default weight unit of a commodity
// item (the integer commodityId of the settings document), for Logistics,
// which declares the same method in an interface of its own.
func (m *Module) LookupCommodity(ctx context.Context, id int) (name, unitName string, conversion float64, found bool, err error) {
	return m.refdata.LookupCommodity(ctx, id)
}
