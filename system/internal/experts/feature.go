package experts

import (
	"github.com/agritrade/api/platform/module"
	"github.com/uptrace/bun"
)

// Deps are what the experts feature is built of.
type Deps struct {
	DB    *bun.DB
	Files Files
}

// Feature is the ask-an-expert feature: its service and routes.
type Feature struct{ *Service }

// New builds the feature, refusing missing dependencies.
func New(d Deps) (*Feature, error) {
	if err := module.CheckDeps("experts", "DB", d.DB, "Files", d.Files); err != nil {
		return nil, err
	}
	return &Feature{Service: NewService(newStore(d.DB), d.Files)}, nil
}
