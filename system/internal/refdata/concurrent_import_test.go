package refdata_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// TestConcurrentImportsOfOneGrade: imports of the same grade at the same
// moment (two admins, two replicas) take turns instead of colliding on the
// variety keys (which answered 500): every one succeeds and the list is one
// of them, whole.
func TestConcurrentImportsOfOneGrade(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		const n = 8
		// n imports at once stand for n replicas: one replica's import limit
		// (imports.max_in_flight) would refuse most of them with 429.
		s, _ := newServer(t, db, testkit.Options{Configure: func(c *config.Config) { c.Imports.MaxInFlight = n }})
		admin := s.Token(testkit.Admin)
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = s.Do(upload(t, admin, "varieties.csv", []byte("commodityId,type,grade,variety\n1,Milling,Group 1,Crusoe\n1,Milling,Group 1,Extase\n"))).Status
			}()
		}
		wg.Wait()
		for i, st := range statuses {
			if st != http.StatusOK {
				t.Fatalf("import %d answered %d", i, st)
			}
		}
		if got := varieties(t, s, wheat, millingGroup1); len(got) != 2 || got[0] != "Crusoe" || got[1] != "Extase" {
			t.Fatalf("varieties %v", got)
		}
	})
}
