package messaging

import (
	"github.com/agritrade/api/platform/module"
	"github.com/uptrace/bun"
)

// Deps are what the messaging feature is built of.
type Deps struct {
	DB *bun.DB
}

// Feature is the conversations feature: its service and routes.
type Feature struct{ svc *Service }

// New builds the feature, refusing missing dependencies.
func New(d Deps) (*Feature, error) {
	if err := module.CheckDeps("messaging", "DB", d.DB); err != nil {
		return nil, err
	}
	return &Feature{svc: NewService(newStore(d.DB))}, nil
}
