// Package system is the System module: files, reference data, locations,
// conversations, expert requests, short links and runtime administration.
package system

import (
	"embed"
	"io/fs"

	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/system/internal/files"
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
}

// New builds the module over the platform's shared parts.
func New(deps module.Deps) *Module {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return &Module{
		Base: module.Base{ModuleName: Name, ModuleVersion: Version, MigrationFS: sub, Document: openapiYAML},
		deps: deps,
	}
}

// Mount binds the module's routes.
func (m *Module) Mount(r module.Routes) {
	files.New(m.deps.Files, m.deps.Log.Component("files")).Mount(r.API)
}
