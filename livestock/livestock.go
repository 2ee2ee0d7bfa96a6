// Package livestock is the Livestock module: marketplace listings for sheep, cattle, working dogs, feed and bedding.
package livestock

import (
	"context"
	"embed"
	"io/fs"
	"slices"

	"github.com/agritrade/api/livestock/internal/categories"
	"github.com/agritrade/api/livestock/internal/listings"
	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
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
	categories *categories.Service
	listings   *listings.Service
}

// New builds the module over the platform's shared parts.
func New(deps module.Deps) *Module {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	cats := categories.NewService(categories.NewStore(deps.DB))
	return &Module{
		Base:       module.Base{ModuleName: Name, ModuleVersion: Version, MigrationFS: sub, Document: openapiYAML},
		deps:       deps,
		categories: cats,
		listings:   listings.NewService(listings.NewStore(deps.DB), deps.Files, cats, deps.Log.Component("listings")),
	}
}

// Mount binds the module's routes.
func (m *Module) Mount(r module.Routes) {
	categories.NewHandler(m.categories).Mount(r.API)
	listings.NewHandler(m.listings).Mount(r.API)
}

// Seed writes the listing categories (module.Seeder).
func (m *Module) Seed(ctx context.Context) error { return m.categories.Seed(ctx) }

// Kinds lists the kinds of listing CreateListing accepts: sheep, cattle,
// working-dog, feed, bedding.
func Kinds() []string { return categories.KindNames() }

// Category is a listing category (GET /livestock/v1/categories).
type Category = categories.Category

// Categories lists the listing categories of a kind (all when kind is empty),
// for building create bodies (sample data).
func Categories(kind string) []Category {
	var out []Category
	for _, c := range categories.All() {
		if kind == "" || string(c.Kind) == kind {
			out = append(out, c)
		}
	}
	return out
}

// CreateListing creates a listing of a kind for p (its current organisation
// owns it) from the JSON body of the kind's create route, with the same
// validation and rules as the API, and answers the new id. It is for sample
// data (agritrade demo) and imports.
func (m *Module) CreateListing(ctx context.Context, p *auth.Principal, kind string, body []byte) (string, error) {
	if !slices.Contains(categories.KindNames(), kind) {
		return "", apierr.BadRequest("unknown listing kind %q", kind)
	}
	return m.listings.Create(ctx, p, categories.Kind(kind), body)
}

// CloseListing closes an active listing of p's organisation as sold, found or
// cancelled (sample data).
func (m *Module) CloseListing(ctx context.Context, p *auth.Principal, id, status string) error {
	return m.listings.Close(ctx, p, id, []byte(`{"status":"`+status+`"}`))
}
