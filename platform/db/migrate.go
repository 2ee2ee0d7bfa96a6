package db

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// migrationFile matches "0001_name.up.sql", "0001_name.down.sql" and the dialect
// variants "0001_name.pg.up.sql" / "0001_name.sqlite.up.sql".
var migrationFile = regexp.MustCompile(`^(\d{4,14})_([a-z0-9_]+?)(?:\.(pg|sqlite))?\.(up|down)\.sql$`)

type sqlPair struct {
	name string
	up   map[string]string // dialect ("" = both) → SQL
	down map[string]string
}

// SQLMigrations reads the *.sql files at the top of fsys into bun migrations.
// A file without a dialect part runs on both dialects; a dialect variant
// replaces it on that dialect. A version with only a pg file is a no-op on
// SQLite (and the other way round), which keeps version numbers aligned.
func SQLMigrations(fsys fs.FS) (*migrate.Migrations, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	pairs := map[string]*sqlPair{}
	for _, e := range entries {
		m := migrationFile.FindStringSubmatch(e.Name())
		if e.IsDir() || m == nil {
			continue
		}
		version, name, dialectName, direction := m[1], m[2], m[3], m[4]
		p := pairs[version]
		if p == nil {
			p = &sqlPair{name: name, up: map[string]string{}, down: map[string]string{}}
			pairs[version] = p
		}
		b, err := fs.ReadFile(fsys, path.Clean(e.Name()))
		if err != nil {
			return nil, err
		}
		if direction == "up" {
			p.up[dialectName] = string(b)
		} else {
			p.down[dialectName] = string(b)
		}
	}
	versions := make([]string, 0, len(pairs))
	for v := range pairs {
		versions = append(versions, v)
	}
	sort.Strings(versions)
	ms := migrate.NewMigrations()
	for _, v := range versions {
		p := pairs[v]
		ms.Add(migrate.Migration{
			Name:    v,
			Comment: p.name,
			Up:      sqlRunner(p.up),
			Down:    sqlRunner(p.down),
		})
	}
	return ms, nil
}

// sqlRunner picks the dialect's script when the migration runs. Its literal
// type is assignable to bun's unexported migration function type.
func sqlRunner(byDialect map[string]string) func(context.Context, *migrate.Migrator, *migrate.Migration) error {
	return func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
		db := m.DB()
		key := "sqlite"
		if IsPostgres(db) {
			key = "pg"
		}
		script, ok := byDialect[key]
		if !ok {
			script = byDialect[""]
		}
		return ExecScript(ctx, db, script)
	}
}

// ExecScript runs a SQL script statement by statement inside one transaction.
func ExecScript(ctx context.Context, db *bun.DB, script string) error {
	stmts := SplitStatements(script)
	if len(stmts) == 0 {
		return nil
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, s := range stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("%w\nin statement: %s", err, s)
			}
		}
		return nil
	})
}

// SplitStatements splits a script at semicolons that end a line, except inside
// dollar-quoted ($$) bodies; comment-only lines are dropped.
func SplitStatements(script string) []string {
	var (
		out      []string
		cur      strings.Builder
		inDollar bool
	)
	for _, line := range strings.Split(script, "\n") {
		trimmed := strings.TrimSpace(line)
		if !inDollar && (trimmed == "" || strings.HasPrefix(trimmed, "--")) {
			continue
		}
		if strings.Count(line, "$$")%2 == 1 {
			inDollar = !inDollar
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if !inDollar && strings.HasSuffix(trimmed, ";") {
			if s := strings.TrimSpace(cur.String()); s != "" {
				out = append(out, s)
			}
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// Migrator runs one module's migrations with that module's own tables.
func Migrator(db *bun.DB, module string, ms *migrate.Migrations) *migrate.Migrator {
	return migrate.NewMigrator(db, ms,
		migrate.WithTableName("bun_migrations_"+module),
		migrate.WithLocksTableName("bun_migration_locks_"+module),
		migrate.WithMarkAppliedOnSuccess(true),
	)
}

// MigrateUp applies every pending migration of a module. On PostgreSQL the
// migration lock keeps concurrent replicas from applying the same one twice.
func MigrateUp(ctx context.Context, db *bun.DB, module string, ms *migrate.Migrations) (*migrate.MigrationGroup, error) {
	if len(ms.Sorted()) == 0 {
		return &migrate.MigrationGroup{}, nil
	}
	m := Migrator(db, module, ms)
	if err := m.Init(ctx); err != nil {
		return nil, fmt.Errorf("init migrations of %s: %w", module, err)
	}
	if err := m.Lock(ctx); err != nil {
		return nil, fmt.Errorf("lock migrations of %s: %w", module, err)
	}
	defer m.Unlock(ctx) //nolint:errcheck // unlock failure leaves a stale lock row, reported by status
	g, err := m.Migrate(ctx)
	if err != nil {
		return g, fmt.Errorf("migrate %s: %w", module, err)
	}
	return g, nil
}

// MigrateDown rolls back the last migration group of a module.
func MigrateDown(ctx context.Context, db *bun.DB, module string, ms *migrate.Migrations) (*migrate.MigrationGroup, error) {
	m := Migrator(db, module, ms)
	if err := m.Init(ctx); err != nil {
		return nil, err
	}
	if err := m.Lock(ctx); err != nil {
		return nil, err
	}
	defer m.Unlock(ctx) //nolint:errcheck // see MigrateUp
	return m.Rollback(ctx)
}

// Status lists the applied and pending migrations of a module.
func Status(ctx context.Context, db *bun.DB, module string, ms *migrate.Migrations) (applied, pending migrate.MigrationSlice, err error) {
	m := Migrator(db, module, ms)
	if err := m.Init(ctx); err != nil {
		return nil, nil, err
	}
	all, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return nil, nil, err
	}
	return all.Applied(), all.Unapplied(), nil
}
