// Package livestock is the Livestock module: marketplace listings for sheep, cattle, working dogs, feed and bedding.
package livestock

import (
	"context"
	"embed"
	"io/fs"

	"github.com/agritrade/api/livestock/internal/categories"
	"github.com/agritrade/api/livestock/internal/listings"
	"github.com/agritrade/api/platform/module"
)

// Name is the module's path segment and log name.
const Name = "livestock"

//go:embed openapi.yaml
var openapiYAML []byte

//go:embed migrations
var migrationFiles embed.FS

// Module is the Livestock module.
type Module struct {
	module.Base
	deps       module.Deps
	categories *categories.Feature
	listings   *listings.Feature
}

// New builds the module over the platform's shared parts.
func New(deps module.Deps) *Module {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	// A feature refuses only missing dependencies: a wiring mistake, like a
	// missing embedded directory above.
	cats, err := categories.New(categories.Deps{DB: deps.DB})
	if err != nil {
		panic(err)
	}
	ls, err := listings.New(listings.Deps{DB: deps.DB, Files: deps.Files, Categories: cats, Log: deps.Log.Component("listings")})
	if err != nil {
		panic(err)
	}
	return &Module{
		Base:       module.Base{ModuleName: Name, ModuleVersion: Version, MigrationFS: sub, Document: openapiYAML},
		deps:       deps,
		categories: cats,
		listings:   ls,
	}
}

// Mount binds the module's routes.
func (m *Module) Mount(r module.Routes) {
	m.categories.Mount(r.API)
	m.listings.Mount(r.API)
}

// Run matches newly active listings against the saved searches until ctx
// ends (module.Runner).
func (m *Module) Run(ctx context.Context) error { return m.listings.RunAlerts(ctx) }

// Seed writes the listing categories (module.Seeder).
func (m *Module) Seed(ctx context.Context) error { return m.categories.Seed(ctx) }
