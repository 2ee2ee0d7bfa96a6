package config_test

import (
	"os"
	"path/filepath"
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
	if len(c.Shortlink.AllowedHosts) != 2 || c.Shortlink.AllowedHosts[1] != "example.org" {
		t.Fatalf("comma list from env: %q", c.Shortlink.AllowedHosts)
	}
	if c.ModuleLog("logistics").Level != "debug" || c.ModuleLog("system").Filter != "files,-http" {
		t.Fatalf("module logs: %+v", c.Modules)
	}
	if _, err := config.Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Fatal("a named missing file was accepted")
	}
}
