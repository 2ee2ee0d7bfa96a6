package main

import (
	"context"

	"github.com/agritrade/api/cmd/internal/buildinfo"
	"github.com/agritrade/api/livestock"
	"github.com/agritrade/api/logistics"
	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/system"
	"github.com/spf13/cobra"
)

type rootFlags struct {
	configFile string
}

func newRoot() *cobra.Command {
	f := &rootFlags{}
	root := &cobra.Command{
		Use:           "agritrade",
		Short:         "AgriTrade API: System, Logistics and Livestock modules in one binary",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Version,
	}
	root.PersistentFlags().StringVar(&f.configFile, "config", "", "configuration file (default ./agritrade.yaml when present)")
	root.AddCommand(newServe(f), newMigrate(f), newToken(f), newVersion(), newImport(f), newDemo(f), newRoutes())
	return root
}

// buildModules is the one place that knows every domain module.
func buildModules(p *app.Platform) []module.Module {
	// The platform's shared components (file store, cache, outbox, bus,
	// events, idempotency, settings, migrations) have no settings route of
	// their own: System's runtime log settings govern them too, as System is
	// the module that administers the runtime (cache clearing, files).
	p.Logs.Follow(app.PlatformName, system.Name)
	sys := system.New(p.Deps(system.Name))
	return []module.Module{
		sys,
		// Logistics reads commodity names and weight units from System's reference data.
		logistics.New(p.Deps(logistics.Name), sys),
		livestock.New(p.Deps(livestock.Name)),
	}
}

// openPlatform loads the configuration and opens the shared parts.
func openPlatform(ctx context.Context, f *rootFlags) (*app.Platform, error) {
	cfg, err := config.Load(f.configFile)
	if err != nil {
		return nil, err
	}
	return app.Open(ctx, cfg, app.Options{})
}
