package logging

import (
	"bytes"
	"strings"
	"testing"
)

func TestFilterAllows(t *testing.T) {
	cases := []struct {
		filter string
		allow  []string
		deny   []string
	}{
		{"", []string{"files", "loads:import", "x"}, nil},
		{"files", []string{"files"}, []string{"files:thumbs", "loads", "filesx"}},
		{"loads:*", []string{"loads", "loads:import", "loads:search:csv"}, []string{"files", "loadsx"}},
		{"files,loads:*,-loads:import", []string{"files", "loads", "loads:search"}, []string{"loads:import", "cache"}},
		{"-http", []string{"files", "loads:import"}, []string{"http"}},
		{"*,-loads:*", []string{"files", "http"}, []string{"loads", "loads:import"}},
		{" Files , LOADS:* ", []string{"files", "loads:x"}, []string{"cache"}},
	}
	for _, c := range cases {
		f, err := ParseFilter(c.filter)
		if err != nil {
			t.Fatalf("%q: %v", c.filter, err)
		}
		for _, a := range c.allow {
			if !f.Allows(a) {
				t.Errorf("%q should allow %q", c.filter, a)
			}
		}
		for _, d := range c.deny {
			if f.Allows(d) {
				t.Errorf("%q should deny %q", c.filter, d)
			}
		}
	}
}

func TestParseFilterRejects(t *testing.T) {
	for _, bad := range []string{"bad pattern", "loads:**", "a,,b:*x", "-", "files;rm"} {
		if _, err := ParseFilter(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestFilterStringRoundTrips(t *testing.T) {
	f, err := ParseFilter("files, loads:*,-loads:import")
	if err != nil {
		t.Fatal(err)
	}
	if f.String() != "files,loads:*,-loads:import" {
		t.Fatalf("canonical form %q", f.String())
	}
}

func TestModuleFilterAndLevelAtRunTime(t *testing.T) {
	var out bytes.Buffer
	reg, err := NewRegistry(&out, "json", "info")
	if err != nil {
		t.Fatal(err)
	}
	sys, logi := reg.Module("system"), reg.Module("logistics")
	files, cache := sys.Component("files"), sys.Component("cache")

	files.Debug("hidden: below level")
	files.Info("files-info-1")
	cache.Info("cache-info-1")
	if err := sys.Apply(Settings{Level: "debug", Filter: "files"}); err != nil {
		t.Fatal(err)
	}
	files.Debug("files-debug-2") // the entry made before the change follows it
	cache.Info("cache-info-2")   // filtered out now
	logi.Component("cache").Info("logistics-cache-info")
	logi.Component("cache").Debug("logistics-debug-hidden") // other module keeps info

	got := out.String()
	for _, want := range []string{"files-info-1", "cache-info-1", "files-debug-2", "logistics-cache-info"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %s", want, got)
		}
	}
	for _, not := range []string{"hidden: below level", "cache-info-2", "logistics-debug-hidden"} {
		if strings.Contains(got, not) {
			t.Errorf("unexpected %q in %s", not, got)
		}
	}
	if !strings.Contains(got, `"module":"system"`) || !strings.Contains(got, `"component":"files"`) {
		t.Errorf("entries lack module/component fields: %s", got)
	}
}

func TestApplyIsAtomic(t *testing.T) {
	reg, _ := NewRegistry(&bytes.Buffer{}, "text", "info")
	m := reg.Module("system")
	if err := m.Apply(Settings{Level: "debug", Filter: "bad pattern"}); err == nil {
		t.Fatal("bad filter accepted")
	}
	if s := m.Settings(); s.Level != "info" || s.Filter != "" {
		t.Fatalf("a failed Apply changed settings: %+v", s)
	}
}

func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{"", "files", "loads:*,-loads:import", "*", "-http", "a:b:c:*", ",,", "-*"} {
		f.Add(s, "loads:import")
	}
	f.Fuzz(func(t *testing.T, filter, component string) {
		p, err := ParseFilter(filter)
		if err != nil {
			return
		}
		// The canonical form parses to a filter that decides the same way.
		again, err := ParseFilter(p.String())
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", p.String(), filter, err)
		}
		if p.Allows(component) != again.Allows(component) {
			t.Fatalf("%q and its canonical form %q disagree on %q", filter, p.String(), component)
		}
	})
}

// TestSettingsReadBackAsSent: logrus names "warn" "warning"; an operator who
// set "warn" must read "warn" back (API.md: level spelled as it was sent).
func TestSettingsReadBackAsSent(t *testing.T) {
	reg, _ := NewRegistry(&bytes.Buffer{}, "text", "info")
	m := reg.Module("system")
	for _, level := range []string{"warn", "warning", "debug"} {
		if err := m.Apply(Settings{Level: level}); err != nil {
			t.Fatal(err)
		}
		if s := m.Settings(); s.Level != level {
			t.Fatalf("set %q, read %q", level, s.Level)
		}
	}
	if m.Logger().GetLevel().String() != "debug" {
		t.Fatalf("logger level %s", m.Logger().GetLevel())
	}
}

// TestFollowerTakesTheLeadersSettings: a follower starts with the leader's
// settings, takes every later change, and its entries keep its own module name.
func TestFollowerTakesTheLeadersSettings(t *testing.T) {
	var out bytes.Buffer
	reg, err := NewRegistry(&out, "json", "info")
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Module("system").Apply(Settings{Level: "warn", Filter: "files"}); err != nil {
		t.Fatal(err)
	}
	reg.Follow("platform", "system")
	plat := reg.Module("platform")
	if got := plat.Settings(); got != (Settings{Level: "warn", Filter: "files"}) {
		t.Fatalf("follower starts with %+v, want the leader's", got)
	}
	plat.Component("files").Info("hidden-below-warn")
	if err := reg.Module("system").Apply(Settings{Level: "debug", Filter: "-cache"}); err != nil {
		t.Fatal(err)
	}
	plat.Component("files").Debug("files-debug-shown")
	plat.Component("cache").Debug("cache-filtered-out")
	got := out.String()
	if strings.Contains(got, "hidden-below-warn") || strings.Contains(got, "cache-filtered-out") {
		t.Fatalf("the follower ignored the leader's settings: %s", got)
	}
	if !strings.Contains(got, "files-debug-shown") || !strings.Contains(got, `"module":"platform"`) {
		t.Fatalf("the follower's entry is missing or renamed: %s", got)
	}
	if err := reg.Module("system").Apply(Settings{Level: "nonsense"}); err == nil {
		t.Fatal("a bad level applied")
	}
	if got := plat.Settings(); got != (Settings{Level: "debug", Filter: "-cache"}) {
		t.Fatalf("a refused change reached the follower: %+v", got)
	}
}
