package logistics_test

import (
	"testing"

	"github.com/agritrade/api/logistics"
	"github.com/agritrade/api/logistics/internal/logisticstest"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

func TestAdminSettings(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		testkit.AdminSettingsScenarios(t, logisticstest.NewServer(t, db), logistics.Name, "system")
	})
}
