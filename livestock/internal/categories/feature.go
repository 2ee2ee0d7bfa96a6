package categories

import (
	"github.com/agritrade/api/platform/module"
	"github.com/uptrace/bun"
)

// Deps are what the categories feature is built of.
type Deps struct {
	DB *bun.DB
}

// Feature is the listing categories: the service (the module seeds them,
// listings check against them) and the route.
type Feature struct{ *Service }

// New builds the feature, refusing missing dependencies.
func New(d Deps) (*Feature, error) {
	if err := module.CheckDeps("categories", "DB", d.DB); err != nil {
		return nil, err
	}
	return &Feature{Service: NewService(NewStore(d.DB))}, nil
}
