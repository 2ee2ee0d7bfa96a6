package app_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
)

// TestServerSweepsAbandonedUploadsWhileRunning starts the server over a local
// file store whose temporary folder holds a partial upload abandoned long ago
// and a fresh one: the server's background work removes the abandoned one,
// and one abandoned while the server runs, and keeps the fresh one.
func TestServerSweepsAbandonedUploadsWhileRunning(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, ".tmp")
	if err := os.MkdirAll(tmp, 0o750); err != nil {
		t.Fatal(err)
	}
	partial := func(name string, age time.Duration) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte("partial upload"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := partial("upload-old", 3*time.Hour)
	fresh := partial("upload-fresh", 0)
	testkit.NewServer(t, testkit.DB(t, testkit.SQLite), func(*app.Platform) []module.Module { return nil }, testkit.Options{
		Configure: func(c *config.Config) {
			c.Files.Dir = dir
			c.Files.SweepInterval = 10 * time.Millisecond
			c.Files.TmpMaxAge = time.Hour
		},
	})
	gone := func(p string) bool { _, err := os.Stat(p); return os.IsNotExist(err) }
	waitGone := func(p string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !gone(p); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s was never swept", filepath.Base(p))
			}
		}
	}
	waitGone(old)
	later := partial("upload-later", 2*time.Hour)
	waitGone(later)
	if gone(fresh) {
		t.Fatal("the fresh partial upload was swept")
	}
}
