package locations

import (
	"net/http"

	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/ratelimit"
	"github.com/agritrade/api/system/internal/locations/gazetteer"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
)

// Deps are what the locations feature is built of.
type Deps struct {
	// Config holds the locations section (ReadConfig) and the base URL.
	Config *config.Config
	DB     *bun.DB
	Log    logrus.FieldLogger
	// Transport carries the calls to outside services (nil: the default;
	// the platform passes its tracing transport).
	Transport http.RoundTripper
	// RateLimit limits the public routes per client IP.
	RateLimit ratelimit.Limiter
}

// Feature is the location lookups: the service (the module seeds the
// gazetteer and imports into it through it) and the routes.
type Feature struct {
	*Service
	limiter ratelimit.Limiter
}

// New builds the feature from its configuration section, refusing missing
// dependencies and a provider it does not know.
func New(d Deps) (*Feature, error) {
	if err := module.CheckDeps("locations", "Config", d.Config, "DB", d.DB, "Log", d.Log); err != nil {
		return nil, err
	}
	lc, err := ReadConfig(d.Config)
	if err != nil {
		return nil, err
	}
	svc, err := NewService(lc, d.Config.BaseURL, gazetteer.NewStore(d.DB), d.Log, d.Transport)
	if err != nil {
		return nil, err
	}
	return &Feature{Service: svc, limiter: d.RateLimit}, nil
}
