package settings_test

import (
	"context"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/settings"
	"github.com/agritrade/api/platform/testkit"
)

// TestChangeAcrossReconnect: a log-settings change broadcast while replica B
// cannot listen (its connections killed, reconnects refused) reaches B as
// soon as its subscription is back, not at the next periodic resync (a
// minute later).
func TestChangeAcrossReconnect(t *testing.T) {
	dsn := testkit.PostgresDSN(t)
	appB := testkit.UniqueName("settings-b-")
	replica := func(name string) *testkit.Server {
		return testkit.NewServer(t, testkit.PostgresAs(t, dsn, name), func(*app.Platform) []module.Module { return nil },
			testkit.Options{NoValidate: true, Configure: func(c *config.Config) { c.DB.DSN = dsn; c.Bus.Backend = "postgres" }})
	}
	a, b := replica(testkit.UniqueName("settings-a-")), replica(appB)
	ctx := context.Background()
	for _, s := range []*testkit.Server{a, b} {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := s.Platform.Bus.Ready(rctx); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	restore := testkit.CutPostgres(t, dsn, appB)
	level := "trace"
	var req settings.Request
	req.Logging = &struct {
		Level  *string `json:"level"`
		Filter *string `json:"filter"`
	}{Level: &level}
	if _, err := a.Platform.Settings.Put(ctx, "logistics", "admin-1", req); err != nil {
		t.Fatal(err)
	}
	if got := b.Platform.Logs.Module("logistics").Settings().Level; got == level {
		t.Fatal("B heard the change while cut off: the scenario did not cut it off")
	}
	restore()
	deadline := time.Now().Add(20 * time.Second)
	for b.Platform.Logs.Module("logistics").Settings().Level != level {
		if time.Now().After(deadline) {
			t.Fatal("B did not take the change made while its subscription was down")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
