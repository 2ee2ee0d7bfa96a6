package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/config"
)

func inDir(t *testing.T, dir string) {
	t.Helper()
	old, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chdir(old) })
}

func TestDefaultsEnvAndFile(t *testing.T) {
	dir := t.TempDir()
	inDir(t, dir)
	// A binary named like the config file without extension must not be read.
	if err := os.WriteFile(filepath.Join(dir, "agritrade"), []byte{0x7f, 'E', 'L', 'F', 0, 1}, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load("")
	if err != nil {
		t.Fatalf("load without a file: %v", err)
	}
	if c.HTTP.Addr != ":8080" || c.DataDir != "data" || c.Bus.Backend != "memory" || c.BaseURL != "http://localhost:8080" {
		t.Fatalf("defaults %+v", c)
	}
	if err := os.WriteFile(filepath.Join(dir, "agritrade.yaml"), []byte("http:\n  addr: \":9090\"\nmodules:\n  logistics:\n    log:\n      level: debug\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGRITRADE_DB_DSN", "postgres://u@db:5432/agri")
	t.Setenv("AGRITRADE_SHORTLINKS_ALLOWED_HOSTS", "example.com, example.org")
	t.Setenv("AGRITRADE_MODULES_SYSTEM_LOG_FILTER", "files,-http")
	c, err = config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.Addr != ":9090" || c.BaseURL != "http://localhost:9090" {
		t.Fatalf("file not read: %+v", c.HTTP)
	}
	if !c.IsPostgres() || c.Bus.Backend != "postgres" {
		t.Fatalf("env DSN: %q bus %q", c.DB.DSN, c.Bus.Backend)
	}
	// A module's own section (shortlinks is the System module's) reads the
	// environment too, a list from one comma-separated variable.
	var links struct {
		AllowedHosts []string `mapstructure:"allowed_hosts"`
	}
	if err := c.Section("shortlinks", map[string]any{"allowed_hosts": []string{}}, &links); err != nil {
		t.Fatal(err)
	}
	if hosts := config.SplitList(links.AllowedHosts); len(hosts) != 2 || hosts[1] != "example.org" {
		t.Fatalf("comma list from env: %q", links.AllowedHosts)
	}
	if c.ModuleLog("logistics").Level != "debug" || c.ModuleLog("system").Filter != "files,-http" {
		t.Fatalf("module logs: %+v", c.Modules)
	}
	if _, err := config.Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Fatal("a named missing file was accepted")
	}
}

// TestDerivedRedisPrefix: replicas of one deployment (same database) derive
// one prefix whatever their credentials and options; deployments on other
// databases derive others; an explicit redis.prefix wins and cache.prefix
// follows it unless set.
func TestDerivedRedisPrefix(t *testing.T) {
	same := []string{
		"postgres://app:secret@db.internal:5432/agritrade?sslmode=disable",
		"postgresql://other:pw@DB.internal/agritrade",
		"postgres://db.internal:5432/agritrade?application_name=x",
	}
	want := config.DerivedRedisPrefix(same[0], "")
	if !strings.HasPrefix(want, "agritrade:") || !strings.HasSuffix(want, ":") {
		t.Fatalf("prefix %q", want)
	}
	for _, dsn := range same[1:] {
		if got := config.DerivedRedisPrefix(dsn, ""); got != want {
			t.Errorf("%s: %q, want %q", dsn, got, want)
		}
	}
	for _, dsn := range []string{
		"postgres://db.internal:5432/agritrade_staging",
		"postgres://db2.internal:5432/agritrade",
		"postgres://db.internal:5433/agritrade",
	} {
		if got := config.DerivedRedisPrefix(dsn, ""); got == want {
			t.Errorf("%s shares the prefix of another deployment", dsn)
		}
	}
	if config.DerivedRedisPrefix("", "/srv/a") == config.DerivedRedisPrefix("", "/srv/b") {
		t.Error("two SQLite data directories share a prefix")
	}
	c := config.Default()
	c.DB.DSN = same[0]
	c.Namespaces()
	if c.Redis.Prefix != want || c.Cache.Prefix != want+"cache:" {
		t.Errorf("namespaces %q %q", c.Redis.Prefix, c.Cache.Prefix)
	}
	c = config.Default()
	c.Redis.Prefix, c.Cache.Prefix = "prod:", "legacy:cache:"
	c.Namespaces()
	if c.Redis.Prefix != "prod:" || c.Cache.Prefix != "legacy:cache:" {
		t.Errorf("explicit namespaces changed: %q %q", c.Redis.Prefix, c.Cache.Prefix)
	}
}

// TestUploadSweepSettings: the sweeper's keys have their defaults and come
// from the environment; an interval that is not positive, or a max age that a
// live upload could reach between two writes (under twice
// http.body_idle_timeout), is refused naming the key.
func TestUploadSweepSettings(t *testing.T) {
	inDir(t, t.TempDir())
	c, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Files.SweepInterval.String() != "10m0s" || c.Files.TmpMaxAge.String() != "1h0m0s" {
		t.Fatalf("defaults: interval %s, max age %s", c.Files.SweepInterval, c.Files.TmpMaxAge)
	}
	t.Setenv("AGRITRADE_FILES_SWEEP_INTERVAL", "30s")
	t.Setenv("AGRITRADE_FILES_TMP_MAX_AGE", "2m")
	if c, err = config.Load(""); err != nil || c.Files.SweepInterval.String() != "30s" || c.Files.TmpMaxAge.String() != "2m0s" {
		t.Fatalf("from the environment: %+v, %v", c.Files, err)
	}
	for _, bad := range []struct{ key, interval, age, idle, want string }{
		{"interval", "0s", "1h", "60s", "files.sweep_interval"},
		{"negative interval", "-1m", "1h", "60s", "files.sweep_interval"},
		{"zero age", "10m", "0s", "60s", "files.tmp_max_age"},
		{"age under twice the idle timeout", "10m", "119s", "60s", "files.tmp_max_age"},
	} {
		t.Run(bad.key, func(t *testing.T) {
			t.Setenv("AGRITRADE_FILES_SWEEP_INTERVAL", bad.interval)
			t.Setenv("AGRITRADE_FILES_TMP_MAX_AGE", bad.age)
			t.Setenv("AGRITRADE_HTTP_BODY_IDLE_TIMEOUT", bad.idle)
			_, err := config.Load("")
			if err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Fatalf("error %v, want one naming %s", err, bad.want)
			}
		})
	}
}

// TestThumbnailSettings: the thumbnail keys have their defaults and come
// from the environment (sizes comma-separated); a pixel limit or a
// concurrency that is not positive is refused naming the key.
func TestThumbnailSettings(t *testing.T) {
	inDir(t, t.TempDir())
	c, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Files.ThumbSizes, ",") != "100x100,300x300,600x0,1200x0" || c.Files.ThumbMaxPixels != 50_000_000 || c.Files.ThumbConcurrency != 2 {
		t.Fatalf("defaults: %v %d %d", c.Files.ThumbSizes, c.Files.ThumbMaxPixels, c.Files.ThumbConcurrency)
	}
	t.Setenv("AGRITRADE_FILES_THUMB_SIZES", "64x64, 200x200f,0x300")
	t.Setenv("AGRITRADE_FILES_THUMB_MAX_PIXELS", "1000000")
	t.Setenv("AGRITRADE_FILES_THUMB_CONCURRENCY", "4")
	if c, err = config.Load(""); err != nil || strings.Join(c.Files.ThumbSizes, ",") != "64x64,200x200f,0x300" ||
		c.Files.ThumbMaxPixels != 1_000_000 || c.Files.ThumbConcurrency != 4 {
		t.Fatalf("from the environment: %+v, %v", c.Files, err)
	}
	refusedNamingKey(t, map[string]string{"AGRITRADE_FILES_THUMB_MAX_PIXELS": "0", "AGRITRADE_FILES_THUMB_CONCURRENCY": "-1"})
}

// refusedNamingKey checks that each environment variable set to its bad
// value makes Load fail with an error naming the key (AGRITRADE_A_B_C: a.b_c).
func refusedNamingKey(t *testing.T, bad map[string]string) {
	t.Helper()
	for env, value := range bad {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, value)
			section, key, _ := strings.Cut(strings.ToLower(strings.TrimPrefix(env, "AGRITRADE_")), "_")
			if _, err := config.Load(""); err == nil || !strings.Contains(err.Error(), section+"."+key) {
				t.Fatalf("error %v, want one naming %s.%s", err, section, key)
			}
		})
	}
}

// TestTracingSettings: the sampling keys have their defaults (a tenth of new
// traces, at most 100 a second) and come from the environment; a ratio
// outside 0..1 or a negative bound is refused naming the key.
func TestTracingSettings(t *testing.T) {
	inDir(t, t.TempDir())
	c, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Otel.SampleRatio != 0.1 || c.Otel.MaxTracesPerSecond != 100 {
		t.Fatalf("defaults: %+v", c.Otel)
	}
	t.Setenv("AGRITRADE_OTEL_SAMPLE_RATIO", "0.5")
	t.Setenv("AGRITRADE_OTEL_MAX_TRACES_PER_SECOND", "0")
	if c, err = config.Load(""); err != nil || c.Otel.SampleRatio != 0.5 || c.Otel.MaxTracesPerSecond != 0 {
		t.Fatalf("from the environment: %+v, %v", c.Otel, err)
	}
	refusedNamingKey(t, map[string]string{"AGRITRADE_OTEL_SAMPLE_RATIO": "1.5", "AGRITRADE_OTEL_MAX_TRACES_PER_SECOND": "-1"})
}
