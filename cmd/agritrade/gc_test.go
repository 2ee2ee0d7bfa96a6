package main

import (
	"runtime/debug"
	"testing"
)

// TestTuneGC: serve sets the collector's target to gcPercent, unless GOGC is
// set in the environment, whose value (applied by the runtime) it keeps.
func TestTuneGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	if got := tuneGC(getenv); got != gcPercent || debug.SetGCPercent(100) != gcPercent {
		t.Fatalf("without GOGC: tuneGC = %d; want the target %d in force", got, gcPercent)
	}
	env["GOGC"] = "50"
	debug.SetGCPercent(50) // what the runtime did with GOGC=50 at start
	if got := tuneGC(getenv); got != 50 || debug.SetGCPercent(50) != 50 {
		t.Fatalf("with GOGC=50: tuneGC = %d; want the operator's 50 kept", got)
	}
}
