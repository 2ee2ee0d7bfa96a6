package listings

import (
	"github.com/agritrade/api/platform/module"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
)

// Deps are what the listings feature is built of.
type Deps struct {
	DB         *bun.DB
	Files      FileResolver
	Categories CategoryChecker
	Log        *logrus.Entry
}

// Feature is the marketplace listings: the service (the module runs its
// saved-search alerts) and the routes.
type Feature struct{ *Service }

// New builds the feature, refusing missing dependencies.
func New(d Deps) (*Feature, error) {
	if err := module.CheckDeps("listings", "DB", d.DB, "Files", d.Files, "Categories", d.Categories, "Log", d.Log); err != nil {
		return nil, err
	}
	return &Feature{Service: NewService(NewStore(d.DB), d.Files, d.Categories, d.Log)}, nil
}
