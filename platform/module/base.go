package module

import (
	"io/fs"

	"github.com/agritrade/api/platform/db"
	"github.com/uptrace/bun/migrate"
)

// Base implements the descriptive half of Module from static parts, so that a
// domain module only writes its constructor and Mount.
type Base struct {
	ModuleName    string
	ModuleVersion string
	// MigrationFS holds the module's *.sql migrations at its top level.
	MigrationFS fs.FS
	// Document is the module's OpenAPI YAML.
	Document []byte
}

// Name returns the module's name.
func (b Base) Name() string { return b.ModuleName }

// Version returns the module's version.
func (b Base) Version() string { return b.ModuleVersion }

// OpenAPI returns the module's OpenAPI document.
func (b Base) OpenAPI() []byte { return b.Document }

// Migrations parses the module's migration files.
func (b Base) Migrations() (*migrate.Migrations, error) {
	if b.MigrationFS == nil {
		return migrate.NewMigrations(), nil
	}
	return db.SQLMigrations(b.MigrationFS)
}
