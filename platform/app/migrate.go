package app

import (
	"context"
	"fmt"

	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/schema"
	"github.com/uptrace/bun/migrate"
)

// MigrationSet is one named set of migrations (the platform's or a module's).
type MigrationSet struct {
	Name       string
	Migrations *migrate.Migrations
}

// MigrationSets lists the platform's set first, then each module's.
func MigrationSets(mods []module.Module) ([]MigrationSet, error) {
	ps, err := schema.Migrations()
	if err != nil {
		return nil, err
	}
	sets := []MigrationSet{{Name: schema.Name, Migrations: ps}}
	for _, m := range mods {
		ms, err := m.Migrations()
		if err != nil {
			return nil, fmt.Errorf("migrations of %s: %w", m.Name(), err)
		}
		sets = append(sets, MigrationSet{Name: m.Name(), Migrations: ms})
	}
	return sets, nil
}

// MigrateUp applies every pending migration, platform first.
func (p *Platform) MigrateUp(ctx context.Context, mods []module.Module) error {
	sets, err := MigrationSets(mods)
	if err != nil {
		return err
	}
	for _, s := range sets {
		g, err := db.MigrateUp(ctx, p.DB, s.Name, s.Migrations)
		if err != nil {
			return err
		}
		if g != nil && !g.IsZero() {
			p.Log.Component("migrate").WithField("set", s.Name).WithField("applied", g.Migrations.String()).Info("migrations applied")
		}
	}
	return nil
}
