package testkit

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agritrade/api/platform/logging"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// QueryRecorder keeps the statements a database runs while it records, so that
// a test can look at the plan of exactly what a store issued (EXPLAIN of the
// very SQL, arguments inlined as bun sends them) rather than of a hand copy.
type QueryRecorder struct {
	mu      sync.Mutex
	on      bool
	queries []string
}

// RecordQueries installs a recorder on db (off until Record).
func RecordQueries(db *bun.DB) *QueryRecorder {
	r := &QueryRecorder{}
	db.AddQueryHook(r) //nolint:staticcheck // the running server holds this *bun.DB: the hook must join it, not a copy
	return r
}

// BeforeQuery implements bun.QueryHook.
func (r *QueryRecorder) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

// AfterQuery implements bun.QueryHook. Only a request's statements are
// recorded (a request id in their context): the server's background runners
// (the alerts queue's poll, the outbox) query the same database on their own
// clock, and a poll falling inside a recording is not the statement under test.
func (r *QueryRecorder) AfterQuery(ctx context.Context, ev *bun.QueryEvent) {
	if logging.RequestID(ctx) == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.queries = append(r.queries, ev.Query)
	}
}

// Record runs fn and answers the SELECT statements requests ran meanwhile
// (a caller that runs a service itself gives its context a request id:
// logging.WithRequestID).
func (r *QueryRecorder) Record(fn func()) []string {
	r.mu.Lock()
	r.on, r.queries = true, nil
	r.mu.Unlock()
	fn()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	var out []string
	for _, q := range r.queries {
		if strings.HasPrefix(strings.TrimSpace(strings.ToUpper(q)), "SELECT") {
			out = append(out, q)
		}
	}
	return out
}

// Plan answers the plan the database chooses for query, one line per node:
// EXPLAIN QUERY PLAN on SQLite ("SEARCH l USING INDEX ..."), EXPLAIN on
// PostgreSQL ("Index Scan using ... on ..."). Run ANALYZE on realistic data
// first: the point is the plan the planner picks, not one it is forced into.
// On SQLite a statement with db.Binder's parameters is planned unbound.
func Plan(t testing.TB, db *bun.DB, query string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	if db.Dialect().Name() == dialect.PG {
		if err := db.NewRaw("EXPLAIN "+query).Scan(ctx, &out); err != nil {
			t.Fatalf("EXPLAIN %s: %v", query, err)
		}
		return out
	}
	// A statement whose values are parameters (db.Binder writes them +?) is
	// planned as when it is prepared: every parameter NULL.
	args := make([]any, strings.Count(query, "+?"))
	rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("EXPLAIN QUERY PLAN %s: %v", query, err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Reads says how a plan may read one table: by searching (never scanning) each
// index of Want, and no index but those of Want and Also (a primary-key lookup
// of the rows that Want found, say). Aliases are the names the query gives the table
// (SQLite names plan nodes by alias, PostgreSQL by table).
type Reads struct {
	Table   string
	Aliases []string
	Want    []string
	Also    []string
}

// AssertIndexed fails unless the plan of query searches every r.Want and reads
// r.Table no other way than through r.Want and r.Also: no full scan of the
// table, nor of a whole index of it (SQLite "SCAN t USING INDEX i" walks the
// whole index; PostgreSQL "Seq Scan on t").
func AssertIndexed(t testing.TB, db *bun.DB, query string, r Reads) {
	t.Helper()
	plan := Plan(t, db, query)
	t.Logf("plan of %.120s…:\n  %s", query, strings.Join(plan, "\n  "))
	if problem := indexProblem(db.Dialect().Name() == dialect.PG, plan, r); problem != "" {
		t.Fatalf("%s\nquery: %s\nplan:\n  %s", problem, query, strings.Join(plan, "\n  "))
	}
}

func indexProblem(pg bool, plan []string, r Reads) string {
	used := map[string]bool{}
	table, aliases := r.Table, r.Aliases
	indexes := append(slices.Clone(r.Want), r.Also...)
	quoted := make([]string, len(indexes))
	for i, x := range indexes {
		quoted[i] = regexp.QuoteMeta(x)
	}
	idx := strings.Join(quoted, "|")
	if pg {
		seq := regexp.MustCompile(`Seq Scan on ` + regexp.QuoteMeta(table) + `\b`)
		// Index Scan, Index Only Scan, Bitmap Index Scan (its heap node names the table).
		search := regexp.MustCompile(`Index (Only )?Scan( Backward)? using (\S+) on ` + regexp.QuoteMeta(table) + `\b`)
		bitmap := regexp.MustCompile(`Bitmap Index Scan on (\S+)`)
		allowed := regexp.MustCompile(`^(` + idx + `)$`)
		for _, l := range plan {
			if seq.MatchString(l) {
				return "full scan of " + table
			}
			if m := search.FindStringSubmatch(l); m != nil {
				if !allowed.MatchString(m[3]) {
					return fmt.Sprintf("%s read through %s, not %v", table, m[3], indexes)
				}
				used[m[3]] = true
			}
			// A bitmap index scan names only its index; the project prefixes
			// index names with their table's.
			if m := bitmap.FindStringSubmatch(l); m != nil && strings.HasPrefix(m[1], table) {
				if !allowed.MatchString(m[1]) {
					return fmt.Sprintf("%s read through %s, not %v", table, m[1], indexes)
				}
				used[m[1]] = true
			}
		}
	} else {
		names := append([]string{table}, aliases...)
		for _, n := range names {
			scan := regexp.MustCompile(`^SCAN ` + regexp.QuoteMeta(n) + `\b`)
			searchOther := regexp.MustCompile(`^SEARCH ` + regexp.QuoteMeta(n) + ` USING (COVERING )?INDEX (\S+)`)
			for _, l := range plan {
				if scan.MatchString(l) {
					return "full scan of " + table + " (" + l + ")"
				}
				if m := searchOther.FindStringSubmatch(l); m != nil {
					if !regexp.MustCompile(`^(` + idx + `)$`).MatchString(m[2]) {
						return fmt.Sprintf("%s read through %s, not %v", table, m[2], indexes)
					}
					used[m[2]] = true
				}
			}
		}
	}
	for _, w := range r.Want {
		if !used[w] {
			return fmt.Sprintf("no search of %s in the plan", w)
		}
	}
	return ""
}
