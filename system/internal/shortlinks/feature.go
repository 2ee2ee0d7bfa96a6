package shortlinks

import (
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/ratelimit"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
)

// Deps are what the short-link feature is built of.
type Deps struct {
	// Config holds the shortlinks section (ReadConfig) and the base URL.
	Config *config.Config
	DB     *bun.DB
	Log    logrus.FieldLogger
	// RateLimit limits link creation per client IP.
	RateLimit ratelimit.Limiter
}

// Feature is the short links: the service and its routes (under the module's
// group and, for the redirect, at the root).
type Feature struct {
	svc     *Service
	limiter ratelimit.Limiter
}

// New builds the feature from its configuration section, refusing missing
// dependencies and templates or hosts that cannot work.
func New(d Deps) (*Feature, error) {
	if err := module.CheckDeps("shortlinks", "Config", d.Config, "DB", d.DB, "Log", d.Log); err != nil {
		return nil, err
	}
	sc, err := ReadConfig(d.Config)
	if err != nil {
		return nil, err
	}
	svc, err := NewService(newStore(d.DB), sc, d.Config.BaseURL, d.Log)
	if err != nil {
		return nil, err
	}
	return &Feature{svc: svc, limiter: d.RateLimit}, nil
}
