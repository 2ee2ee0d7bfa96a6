package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
	"go.yaml.in/yaml/v3"
)

// scrape is one /metrics answer: every sample by its series as exposed
// (name{labels}), and the metric families declared (# TYPE).
type scrape struct {
	samples  map[string]float64
	families map[string]bool
}

func scrapeMetrics(t *testing.T, srv *testkit.Server) scrape {
	t.Helper()
	res := srv.Do(testkit.Request{Method: http.MethodGet, Path: "/metrics", Token: srv.Token(adminPrincipal)})
	if res.Status != http.StatusOK {
		t.Fatalf("/metrics: %d %q", res.Status, res.Body)
	}
	s := scrape{samples: map[string]float64{}, families: map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(res.Body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			s.families[strings.Fields(f)[0]] = true
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample line %q", line)
		}
		s.samples[line[:i]] = v
	}
	return s
}

// value sums the samples of a metric whose labels include every pair given.
func (s scrape) value(name string, labels ...string) float64 {
	total := 0.0
	for series, v := range s.samples {
		if series != name && !strings.HasPrefix(series, name+"{") {
			continue
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			if !strings.Contains(series, labels[i]+`="`+labels[i+1]+`"`) {
				match = false
			}
		}
		if match {
			total += v
		}
	}
	return total
}

func (s scrape) has(name string, labels ...string) bool {
	for series := range s.samples {
		if series == name || strings.HasPrefix(series, name+"{") {
			ok := true
			for i := 0; i+1 < len(labels); i += 2 {
				ok = ok && strings.Contains(series, labels[i]+`="`+labels[i+1]+`"`)
			}
			if ok {
				return true
			}
		}
	}
	return false
}

// TestMetricsAfterRealOperations drives a real server through what the
// metrics count (notifications delivered and dead, a cache miss then hit, a
// rate limit reached, a CSV import, an upload and its download, a readiness
// check) and reads the changes back from /metrics, on both dialects.
func TestMetricsAfterRealOperations(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		recv := newWebhookReceiver(t)
		srv := testkit.NewServer(t, bdb, newProbe, testkit.Options{NoValidate: true, Configure: func(c *config.Config) {
			webhookConfig(recv.URL)(c)
			c.Notify.MaxAttempts = 1
			c.RateLimit.PerMinute, c.RateLimit.Burst = 1, 1
		}})
		before := scrapeMetrics(t, srv)

		for _, path := range []string{"/probe/v1/events", "/probe/v1/events", "/probe/v1/events?type=probe.doomed"} {
			if r := srv.Do(testkit.Request{Method: http.MethodPost, Path: path}); r.Status != http.StatusAccepted {
				t.Fatalf("POST %s: %d %s", path, r.Status, r.Body)
			}
		}
		recv.wait(t, 3)
		for _, want := range []bool{false, true} {
			var got struct{ Hit bool }
			srv.Do(testkit.Request{Method: http.MethodGet, Path: "/probe/v1/cached/k-" + string(bdb.Dialect().Name().String()[0])}).Decode(t, &got)
			if got.Hit != want {
				t.Fatalf("cache hit %v, want %v", got.Hit, want)
			}
		}
		for _, want := range []int{http.StatusNoContent, http.StatusTooManyRequests} {
			if r := srv.Do(testkit.Request{Method: http.MethodGet, Path: "/probe/v1/limited"}); r.Status != want {
				t.Fatalf("GET /probe/v1/limited: %d, want %d", r.Status, want)
			}
		}
		body, ct := multipartCSV(t, "name,qty\nwheat,1\n,2\nbarley,3\n")
		if r := srv.Do(testkit.Request{Method: http.MethodPost, Path: "/probe/v1/import", Body: body, ContentType: ct}); r.Status != http.StatusOK {
			t.Fatalf("import: %d %s", r.Status, r.Body)
		}
		body, ct = multipartCSV(t, "name\nwheat\n")
		if r := srv.Do(testkit.Request{Method: http.MethodPost, Path: "/probe/v1/import", Body: body, ContentType: ct}); r.Status != http.StatusBadRequest {
			t.Fatalf("import of a file without its columns: %d %s", r.Status, r.Body)
		}
		ctx := context.Background()
		owner := &auth.Principal{UserID: "u1", OrgID: "o1", Orgs: []string{"o1"}}
		content := []byte("%PDF-1.4\n% a document of some length\n")
		rec, err := srv.Platform.Files.Put(ctx, owner, filestore.PutInput{Bucket: filestore.BucketFiles, Type: "contract", Name: "a.pdf", OrganisationID: "o1", Body: bytes.NewReader(content)})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := srv.Platform.Files.Read(ctx, rec, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		_, _ = out.ReadFrom(rc)
		_ = rc.Close()
		if r := srv.Do(testkit.Request{Method: http.MethodGet, Path: "/readyz"}); r.Status != http.StatusOK {
			t.Fatalf("/readyz %d", r.Status)
		}

		// The outcome of the doomed event is stored just after its delivery.
		var after scrape
		for deadline := time.Now().Add(10 * time.Second); ; {
			after = scrapeMetrics(t, srv)
			if after.value("agritrade_outbox_dead_events_total", "channel", "webhook")-before.value("agritrade_outbox_dead_events_total", "channel", "webhook") >= 1 &&
				after.value("agritrade_outbox_pending_events") == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		delta := func(name string, labels ...string) float64 {
			return after.value(name, labels...) - before.value(name, labels...)
		}
		checks := []struct {
			what string
			got  float64
			want float64
		}{
			{"webhook deliveries", delta("agritrade_outbox_deliveries_total", "channel", "webhook", "outcome", "delivered"), 2},
			{"webhook failures", delta("agritrade_outbox_deliveries_total", "channel", "webhook", "outcome", "failed"), 1},
			{"log deliveries", delta("agritrade_outbox_deliveries_total", "channel", "log", "outcome", "delivered"), 3},
			{"dead events", delta("agritrade_outbox_dead_events_total", "channel", "webhook"), 1},
			{"delivery latency observations", delta("agritrade_outbox_delivery_duration_seconds_count", "channel", "webhook"), 3},
			{"pending events", after.value("agritrade_outbox_pending_events"), 0},
			{"oldest pending age", after.value("agritrade_outbox_oldest_pending_age_seconds"), 0},
			{"cache misses", delta("agritrade_cache_misses_total", "backend", "memory"), 1},
			{"cache hits", delta("agritrade_cache_hits_total", "backend", "memory"), 1},
			{"rate limit allowed", delta("agritrade_ratelimit_requests_total", "scope", "probe", "decision", "allowed"), 1},
			{"rate limit limited", delta("agritrade_ratelimit_requests_total", "scope", "probe", "decision", "limited"), 1},
			{"imported rows", delta("agritrade_import_rows_total", "importer", "probe", "status", "success"), 2},
			{"rejected rows", delta("agritrade_import_rows_total", "importer", "probe", "status", "validation"), 1},
			{"import durations", delta("agritrade_import_duration_seconds_count", "importer", "probe"), 2},
			{"failed imports", delta("agritrade_import_failures_total", "importer", "probe"), 1},
			{"file bytes in", delta("agritrade_filestore_bytes_total", "direction", "in"), float64(len(content))},
			{"file bytes out", delta("agritrade_filestore_bytes_total", "direction", "out"), float64(len(content))},
			{"ready", after.value("agritrade_ready"), 1},
			{"build info of the probe module", after.value("agritrade_build_info", "module", "probe", "version", "1.4.2", "build", "test"), 1},
			{"build info of the platform", after.value("agritrade_build_info", "module", "platform"), 1},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
			}
		}
		if !after.has("go_sql_in_use_connections", "db_name", "agritrade") || !after.has("go_sql_wait_count_total") {
			t.Error("the database pool metrics are missing")
		}
		for _, name := range []string{"agritrade_sqlite_wal_bytes", "agritrade_sqlite_file_syncs_total"} {
			if sqlite := bdb.Dialect().Name().String() == "sqlite"; sqlite != after.has(name) {
				t.Errorf("%s exported %v on %s", name, !sqlite, bdb.Dialect().Name())
			}
		}
		if bdb.Dialect().Name().String() == "sqlite" && after.value("agritrade_sqlite_wal_bytes") <= 0 {
			t.Error("the WAL of a database just written is empty")
		}
		if bdb.Dialect().Name().String() == "sqlite" {
			commits, writes := after.value("agritrade_sqlite_write_commits_total"), after.value("agritrade_sqlite_write_transactions_total")
			if commits <= 0 || writes < commits || writes > 32*commits {
				t.Errorf("group commit: %v write transactions in %v COMMITs, want at least one COMMIT of 1 to 32", writes, commits)
			}
		}
		if bdb.Dialect().Name().String() == "sqlite" { // the WAL panel is SQLite's
			checkDeployReferences(t, after)
		}
	})
}

// checkDeployReferences reads every PromQL expression of the Grafana
// dashboard and of the alert rules in deploy/monitoring and checks that each
// names at least one metric, and that every metric it names is one this
// server exported (histogram series by their family).
func checkDeployReferences(t *testing.T, s scrape) {
	t.Helper()
	var exprs []string
	raw, err := os.ReadFile("../../deploy/monitoring/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	rules, err := os.ReadFile("../../deploy/monitoring/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(rules, &doc); err != nil {
		t.Fatalf("alert rules: %v", err)
	}
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	if len(exprs) < 20 {
		t.Fatalf("only %d expressions found in deploy/monitoring", len(exprs))
	}
	for _, e := range exprs {
		names := metricName.FindAllString(e, -1)
		if len(names) == 0 {
			t.Errorf("%q names no metric of the service", e)
		}
		for _, n := range names {
			if !s.families[n] && !s.families[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")] {
				t.Errorf("%q uses %s, which /metrics does not export", e, n)
			}
		}
	}
}

// metricName matches the names of the service's metric families in PromQL:
// its own, database/sql's pool (go_sql_), the Go runtime's and the process's.
var metricName = regexp.MustCompile(`\b(?:agritrade|go|process)_[a-z0-9_]+\b`)
