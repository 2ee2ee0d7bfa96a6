package refdata

import (
	"github.com/agritrade/api/platform/cache"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/tabular"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
)

// Deps are what the reference data feature is built of.
type Deps struct {
	DB    *bun.DB
	Cache cache.Cache
	Log   logrus.FieldLogger
	// MaxUpload caps an import file; Imports limits the imports in flight
	// (nil admits all).
	MaxUpload int64
	Imports   *tabular.Gate
}

// Feature is the reference data: its service (the module seeds it and looks
// commodities up through it) and routes.
type Feature struct {
	*Service
	maxUpload int64
	gate      *tabular.Gate
}

// New builds the feature, refusing missing dependencies.
func New(d Deps) (*Feature, error) {
	if err := module.CheckDeps("refdata", "DB", d.DB, "Cache", d.Cache, "Log", d.Log); err != nil {
		return nil, err
	}
	return &Feature{Service: NewService(NewStore(d.DB), d.Cache, d.Log), maxUpload: d.MaxUpload, gate: d.Imports}, nil
}
