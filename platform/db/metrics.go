package db

import (
	"context"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/uptrace/bun"
)

// Collectors answers the database's metrics: the connection pool
// (go_sql_in_use_connections, go_sql_wait_count_total... of database/sql's
// DBStats, db_name "agritrade") and, on SQLite, the group commit's counts and
// the size of the write-ahead log, which grows when checkpoints cannot keep
// up with the writes.
func Collectors(ctx context.Context, bdb *bun.DB) []prometheus.Collector {
	out := []prometheus.Collector{collectors.NewDBStatsCollector(bdb.DB, "agritrade")}
	if IsPostgres(bdb) {
		return out
	}
	if w := gateOf(bdb); w != nil {
		out = append(out,
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "agritrade_sqlite_write_commits_total",
				Help: "COMMITs of the SQLite write transactions, each shared by the writers that met at the write gate.",
			}, func() float64 { return float64(w.commits.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "agritrade_sqlite_write_transactions_total",
				Help: "Write transactions (InTx) committed on SQLite; divided by agritrade_sqlite_write_commits_total, the writers per COMMIT.",
			}, func() float64 { return float64(w.writes.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "agritrade_sqlite_checkpoints_total",
				Help: "WAL checkpoints run beside the SQLite writers (each copies the WAL's pages back into the database file).",
			}, func() float64 { return float64(w.checkpoints.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "agritrade_sqlite_wal_truncates_total",
				Help: "WAL files cut back to nothing by an idle write gate after a burst had grown them past twice their restart size (agritrade_sqlite_wal_bytes).",
			}, func() float64 { return float64(w.truncates.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "agritrade_sqlite_file_syncs_total",
				Help: "fsyncs of the SQLite database file before the checkpoint that holds the write gate, so that the writers do not wait for them (0 where SQLite's descriptors cannot be listed: that checkpoint syncs the file itself).",
			}, func() float64 { return float64(w.file.synced.Load()) }))
	}
	if file := sqliteFile(ctx, bdb); file != "" {
		out = append(out, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "agritrade_sqlite_wal_bytes",
			Help: "Size of the SQLite write-ahead log file (0 right after a truncating checkpoint).",
		}, func() float64 {
			fi, err := os.Stat(file + "-wal")
			if err != nil {
				return 0 // no WAL file: nothing written since the last close
			}
			return float64(fi.Size())
		}))
	}
	return out
}

// sqliteFile answers the main database file of a SQLite handle ("" for an
// in-memory database or when it cannot be read).
func sqliteFile(ctx context.Context, bdb *bun.DB) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rows, err := bdb.QueryContext(ctx, "PRAGMA database_list")
	if err != nil {
		return ""
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var (
			seq        int
			name, file string
		)
		if rows.Scan(&seq, &name, &file) == nil && name == "main" {
			return file
		}
	}
	return ""
}
