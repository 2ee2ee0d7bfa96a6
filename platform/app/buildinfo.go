package app

import (
	"errors"
	"runtime"

	"github.com/agritrade/api/platform/module"
	"github.com/prometheus/client_golang/prometheus"
)

// registerBuildInfo exports agritrade_build_info: one series per module
// (platform included) with its version (each module's version.go), the
// binary's build and the Go version, always 1, so that dashboards can show
// what runs and alerts can join on it.
func registerBuildInfo(p *Platform, build string, mods []module.Module) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "agritrade_build_info",
		Help: "Versions of the running binary: one series per module, value 1.",
	}, []string{"module", "version", "build", "goversion"})
	g.WithLabelValues(PlatformName, Version, build, runtime.Version()).Set(1)
	for _, m := range mods {
		g.WithLabelValues(m.Name(), m.Version(), build, runtime.Version()).Set(1)
	}
	// A second server over the same platform (tests) keeps the first's series.
	if err := p.Metrics.Registry.Register(g); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			panic(err) // a clash of names is a programming error
		}
	}
}
