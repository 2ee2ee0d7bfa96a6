package admin

import (
	"github.com/agritrade/api/platform/bus"
	"github.com/agritrade/api/platform/cache"
	"github.com/agritrade/api/platform/module"
	"github.com/sirupsen/logrus"
)

// Deps are what the admin feature is built of.
type Deps struct {
	Cache   cache.Cache
	Secrets SecretsReloader
	Bus     bus.Bus
	Log     logrus.FieldLogger
}

// Feature is the cache and secrets administration: its service and route.
type Feature struct{ svc *Service }

// New builds the feature, refusing missing dependencies; the service
// subscribes to other replicas' reload requests at once.
func New(d Deps) (*Feature, error) {
	if err := module.CheckDeps("admin", "Cache", d.Cache, "Secrets", d.Secrets, "Bus", d.Bus, "Log", d.Log); err != nil {
		return nil, err
	}
	return &Feature{svc: NewService(d.Cache, d.Secrets, d.Bus, d.Log)}, nil
}
