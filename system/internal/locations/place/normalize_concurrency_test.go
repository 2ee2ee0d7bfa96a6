package place

import (
	"sync"
	"testing"
)

// TestNormalizeConcurrently guards the accent folding: seeds and searches run
// in parallel, and a transformer shared between goroutines panics.
func TestNormalizeConcurrently(t *testing.T) {
	names := []string{"Dún Laoghaire", "Ystradgynlais", "Béal Feirste", "Newcastle upon Tyne", "Ceann Léime"}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				n := names[i%len(names)]
				if got := Normalize(n); got == "" {
					t.Errorf("Normalize(%q) is empty", n)
				}
			}
		}()
	}
	wg.Wait()
	if got := Normalize("Dún Laoghaire"); got != "dun laoghaire" {
		t.Fatalf("Normalize folded to %q", got)
	}
}
