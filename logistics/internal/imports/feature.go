package imports

import (
	"github.com/agritrade/api/logistics/internal/loads"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/tabular"
	"github.com/gin-gonic/gin"
	"github.com/sirupsen/logrus"
)

// Deps are what the batch import feature is built of.
type Deps struct {
	// Loads owns the rules every imported row goes through.
	Loads *loads.Service
	Log   *logrus.Entry
	// MaxUpload caps the upload in bytes; Imports (nil: none) limits the
	// imports in flight on this replica.
	MaxUpload int64
	Imports   *tabular.Gate
}

// Feature is the batch import of loads: its service and route.
type Feature struct{ h *Handler }

// New builds the feature, refusing missing dependencies.
func New(d Deps) (*Feature, error) {
	if err := module.CheckDeps("imports", "Loads", d.Loads, "Log", d.Log); err != nil {
		return nil, err
	}
	return &Feature{h: newHandler(NewService(d.Loads, d.Log), d.MaxUpload, d.Imports)}, nil
}

// Mount binds POST /batch on the /loads group (authentication required).
func (f *Feature) Mount(g gin.IRouter) { f.h.mount(g) }
