package auth_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agritrade/api/platform/auth"
)

// TestGeneratedSecretIsAgreedOn: replicas starting together on one data dir
// end up with one secret, and an empty secret file left by a start killed
// half-way (as earlier versions could) does not stop the next start.
func TestGeneratedSecretIsAgreedOn(t *testing.T) {
	dir := t.TempDir()
	const n = 16
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := auth.LoadOrCreateSecret("", dir)
			if err != nil {
				t.Error(err)
			}
			got[i] = string(s)
		}()
	}
	wg.Wait()
	for i := range got {
		if got[i] == "" || got[i] != got[0] {
			t.Fatalf("start %d got %q, start 0 got %q", i, got[i], got[0])
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".auth.secret-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}

	empty := t.TempDir()
	path := filepath.Join(empty, auth.SecretFile)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	s, err := auth.LoadOrCreateSecret("", empty)
	if err != nil || len(s) < 32 {
		t.Fatalf("empty leftover: %q %v", s, err)
	}
	if again, _ := auth.LoadOrCreateSecret("", empty); string(again) != string(s) {
		t.Fatal("the replaced secret did not stick")
	}
}
