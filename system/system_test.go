package system_test

import (
	"testing"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
	"github.com/uptrace/bun"
)

func newServer(t *testing.T, db *bun.DB) *testkit.Server {
	return testkit.NewServer(t, db, func(p *app.Platform) []module.Module {
		return []module.Module{system.New(p.Deps(system.Name))}
	})
}

func TestAdminSettings(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		testkit.AdminSettingsScenarios(t, newServer(t, db), system.Name, "logistics")
	})
}
