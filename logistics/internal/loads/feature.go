package loads

import (
	"github.com/agritrade/api/platform/module"
	"github.com/gin-gonic/gin"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
)

// Deps are what the loads feature is built of.
type Deps struct {
	DB *bun.DB
	// Commodities finds the commodity a load names (System's reference data,
	// wired by cmd through the module).
	Commodities CommodityLookup
	Files       Files
	Log         *logrus.Entry
	// MaxItems caps list bodies (0: the default).
	MaxItems int
}

// Feature is the loads: the service (which the imports feature builds on)
// and the routes.
type Feature struct {
	*Service
	h *Handler
}

// New builds the feature, refusing missing dependencies.
func New(d Deps) (*Feature, error) {
	if err := module.CheckDeps("loads", "DB", d.DB, "Commodities", d.Commodities, "Files", d.Files, "Log", d.Log); err != nil {
		return nil, err
	}
	svc := NewService(NewStore(d.DB), d.Commodities, d.Files, d.Log)
	return &Feature{Service: svc, h: newHandler(svc, d.MaxItems)}, nil
}

// Mount binds the routes on the /loads group (authentication required).
func (f *Feature) Mount(g gin.IRouter) { f.h.mount(g) }
