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

// MigrateUp brings the database to this build: every pending migration
// (platform first, then each module's), then every module's seed (reference
// data), all under the migration lock (db.WithMigrationLock). Replicas and the
// migrate Job that start together therefore take turns: the first does the
// work, the others wait for it and then find nothing to do; a start killed at
// any point releases the lock with its death and leaves nothing half-applied
// (each migration commits with its record; each seed is one transaction).
func (p *Platform) MigrateUp(ctx context.Context, mods []module.Module) error {
	sets, err := MigrationSets(mods)
	if err != nil {
		return err
	}
	log := p.Log.Component("migrate")
	opts := db.LockOptions{
		Wait: p.Config.DB.MigrationLockWait,
		OnWait: func(holder string) {
			log.WithField("holder", holder).Info("another process is migrating; waiting for it")
		},
	}
	return db.WithMigrationLock(ctx, p.DB, opts, func(ctx context.Context) error {
		for _, s := range sets {
			g, err := db.MigrateUp(ctx, p.DB, s.Name, s.Migrations)
			if err != nil {
				return err
			}
			if g != nil && !g.IsZero() {
				log.WithField("set", s.Name).WithField("applied", g.Migrations.String()).Info("migrations applied")
			}
		}
		for _, m := range mods {
			if sd, ok := m.(module.Seeder); ok {
				if err := sd.Seed(ctx); err != nil {
					return fmt.Errorf("seed %s: %w", m.Name(), err)
				}
			}
		}
		return nil
	})
}
