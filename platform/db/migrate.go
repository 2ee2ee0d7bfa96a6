package db

import (
	"context"
	"database/sql"
	"errors"
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
		} else if p.name != name {
			// Two features that picked the same number would otherwise share
			// one record and one of them would silently never run.
			return nil, fmt.Errorf("two migrations are numbered %s (%s and %s): renumber one", version, p.name, name)
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
// type is assignable to bun's unexported migration function type. It runs in
// the transaction the runner passes in ctx, so that the script and the row
// recording it commit together (or not at all).
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
		tx, ok := ctx.Value(migrationTxKey{}).(bun.Tx)
		if !ok {
			return ExecScript(ctx, db, script)
		}
		return execStatements(ctx, tx, SplitStatements(script))
	}
}

// ExecScript runs a SQL script statement by statement inside one transaction.
func ExecScript(ctx context.Context, db *bun.DB, script string) error {
	stmts := SplitStatements(script)
	if len(stmts) == 0 {
		return nil
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return execStatements(ctx, tx, stmts)
	})
}

func execStatements(ctx context.Context, tx bun.Tx, stmts []string) error {
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%w\nin statement: %s", err, s)
		}
	}
	return nil
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

// migrationTxKey carries the runner's transaction to sqlRunner.
type migrationTxKey struct{}

// The runner below replaces bun's Migrator.Migrate/Rollback for two reasons:
// bun records a migration in a statement of its own after the migration's
// transaction commits, so a process killed between the two leaves a schema
// change that the next start tries again (and fails on); and bun serialises
// processes with a row in bun_migration_locks_<set>, which a killed process
// leaves behind and which then blocks every start until removed by hand. Here
// each migration and its row commit in one transaction, and processes are
// serialised by WithMigrationLock, which cannot outlive its holder. The
// bun_migrations_<set> tables keep bun's layout, so existing databases carry on.

func migrationsTable(module string) string { return "bun_migrations_" + module }

// ensureMigrationsTable creates a set's table; only ever under the migration
// lock: concurrent CREATE TABLE IF NOT EXISTS of one table can fail on
// PostgreSQL (a duplicate pg_type row).
func ensureMigrationsTable(ctx context.Context, db *bun.DB, module string) error {
	_, err := db.NewCreateTable().Model((*migrate.Migration)(nil)).
		ModelTableExpr(migrationsTable(module)).IfNotExists().Exec(ctx)
	if err != nil {
		return fmt.Errorf("create the migrations table of %s: %w", module, err)
	}
	// bun's lock table of earlier versions: a row left in it by a killed start
	// used to block every later one. Nothing reads it any more.
	if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS bun_migration_locks_"+module); err != nil {
		return fmt.Errorf("drop the old migration lock table of %s: %w", module, err)
	}
	return nil
}

// withStatus returns the set's migrations in order, the applied ones with
// their id, group and time, and the last group id.
func withStatus(ctx context.Context, db bun.IDB, module string, ms *migrate.Migrations) (migrate.MigrationSlice, int64, error) {
	var applied []migrate.Migration
	if err := db.NewSelect().ColumnExpr("*").Model(&applied).ModelTableExpr(migrationsTable(module)).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, 0, err
	}
	byName := map[string]migrate.Migration{}
	var last int64
	for _, a := range applied {
		byName[a.Name] = a
		last = max(last, a.GroupID)
	}
	sorted := ms.Sorted()
	for i := range sorted {
		if a, ok := byName[sorted[i].Name]; ok {
			sorted[i].ID, sorted[i].GroupID, sorted[i].MigratedAt = a.ID, a.GroupID, a.MigratedAt
		}
	}
	return sorted, last, nil
}

// MigrateUp applies every pending migration of a module, each in one
// transaction with its row in bun_migrations_<module>, under the migration
// lock (taken here unless ctx already holds it: see WithMigrationLock).
func MigrateUp(ctx context.Context, db *bun.DB, module string, ms *migrate.Migrations) (*migrate.MigrationGroup, error) {
	group := &migrate.MigrationGroup{}
	if len(ms.Sorted()) == 0 {
		return group, nil
	}
	err := WithMigrationLock(ctx, db, LockOptions{}, func(ctx context.Context) error {
		if err := ensureMigrationsTable(ctx, db, module); err != nil {
			return err
		}
		all, last, err := withStatus(ctx, db, module, ms)
		if err != nil {
			return fmt.Errorf("read the migrations of %s: %w", module, err)
		}
		pending := all.Unapplied()
		if len(pending) == 0 {
			return nil
		}
		group.ID = last + 1
		runner := migrate.NewMigrator(db, ms, migrate.WithTableName(migrationsTable(module)))
		for _, m := range pending {
			m.GroupID = group.ID
			err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				if m.Up != nil {
					if err := m.Up(context.WithValue(ctx, migrationTxKey{}, tx), runner, &m); err != nil {
						return err
					}
				}
				_, err := tx.NewInsert().Model(&m).ModelTableExpr(migrationsTable(module)).Exec(ctx)
				return err
			})
			if err != nil {
				return fmt.Errorf("migrate %s: %s: %w", module, m.String(), err)
			}
			group.Migrations = append(group.Migrations, m)
		}
		return nil
	})
	return group, err
}

// MigrateDown rolls back the last migration group of a module, newest first,
// each migration in one transaction with the removal of its row.
func MigrateDown(ctx context.Context, db *bun.DB, module string, ms *migrate.Migrations) (*migrate.MigrationGroup, error) {
	group := &migrate.MigrationGroup{}
	err := WithMigrationLock(ctx, db, LockOptions{}, func(ctx context.Context) error {
		if err := ensureMigrationsTable(ctx, db, module); err != nil {
			return err
		}
		all, last, err := withStatus(ctx, db, module, ms)
		if err != nil {
			return fmt.Errorf("read the migrations of %s: %w", module, err)
		}
		if last == 0 {
			return nil
		}
		group.ID = last
		runner := migrate.NewMigrator(db, ms, migrate.WithTableName(migrationsTable(module)))
		for i := len(all) - 1; i >= 0; i-- {
			m := all[i]
			if m.GroupID != last {
				continue
			}
			err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				if m.Down != nil {
					if err := m.Down(context.WithValue(ctx, migrationTxKey{}, tx), runner, &m); err != nil {
						return err
					}
				}
				_, err := tx.NewDelete().Model(&m).ModelTableExpr(migrationsTable(module)).Where("id = ?", m.ID).Exec(ctx)
				return err
			})
			if err != nil {
				return fmt.Errorf("roll back %s: %s: %w", module, m.String(), err)
			}
			group.Migrations = append(group.Migrations, m)
		}
		return nil
	})
	return group, err
}

// Status lists the applied and pending migrations of a module. It writes
// nothing and takes no lock: a database without the set's table has every
// migration pending.
func Status(ctx context.Context, db *bun.DB, module string, ms *migrate.Migrations) (applied, pending migrate.MigrationSlice, err error) {
	exists, err := tableExists(ctx, db, migrationsTable(module))
	if err != nil {
		return nil, nil, err
	}
	if !exists {
		return migrate.MigrationSlice{}, ms.Sorted(), nil
	}
	all, _, err := withStatus(ctx, db, module, ms)
	if err != nil {
		return nil, nil, err
	}
	return all.Applied(), all.Unapplied(), nil
}

func tableExists(ctx context.Context, db *bun.DB, name string) (bool, error) {
	q := "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
	if IsPostgres(db) {
		q = "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = ?"
	}
	var n int
	err := db.QueryRowContext(ctx, q, name).Scan(&n)
	return n > 0, err
}
