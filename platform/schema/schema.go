// Package schema holds the platform's own tables (module settings, and the
// file, outbox and cache tables of the platform packages), migrated before any
// module as the "platform" migration set.
package schema

import (
	"embed"
	"io/fs"

	"github.com/agritrade/api/platform/db"
	"github.com/uptrace/bun/migrate"
)

//go:embed migrations/*.sql
var files embed.FS

// Name is the migration set's name (its table is bun_migrations_platform).
const Name = "platform"

// Migrations returns the platform's migrations.
func Migrations() (*migrate.Migrations, error) {
	sub, err := fs.Sub(files, "migrations")
	if err != nil {
		return nil, err
	}
	return db.SQLMigrations(sub)
}
