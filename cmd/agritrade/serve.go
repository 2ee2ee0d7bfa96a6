package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/agritrade/api/cmd/internal/buildinfo"
	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/procs"
	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
)

func newServe(f *rootFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Migrate the database, then serve the API until SIGTERM",
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := time.Now()
			ctx := cmd.Context()
			tuneGC(os.Getenv)
			p, err := openPlatform(ctx, f)
			if err != nil {
				return err
			}
			defer p.Close()
			mods := buildModules(p)
			if err := p.MigrateUp(ctx, mods); err != nil {
				return err
			}
			srv, err := app.NewServer(p, buildinfo.Version, mods...)
			if err != nil {
				return err
			}
			var wg sync.WaitGroup
			if err := srv.Start(ctx, &wg); err != nil {
				return err
			}
			defer wg.Wait()
			log := p.Log.Entry()
			governProcs(ctx, &wg, p.Config.Runtime.AdaptiveProcs, os.Getenv, p.Log.Component("procs"))
			go func() {
				if err := srv.DocsReady(); err != nil {
					log.WithError(err).Error("the OpenAPI documents could not be built; /openapi.json answers 500")
				}
			}()
			return srv.Serve(ctx, p.Config.HTTP.Addr, func(addr net.Addr) {
				log.WithField("addr", addr.String()).WithField("startup", time.Since(start).Round(time.Millisecond).String()).
					WithField("database", p.DB.Dialect().Name().String()).Info("AgriTrade API ready")
				fmt.Fprintf(cmd.OutOrStdout(), "\nAgriTrade API %s listening on %s\n", buildinfo.Version, addr)
				fmt.Fprintf(cmd.OutOrStdout(), "  API docs:     %s/docs   (OpenAPI: %s/openapi.json)\n", p.Config.BaseURL, p.Config.BaseURL)
				fmt.Fprintf(cmd.OutOrStdout(), "  Get a token:  go run ./cmd/agritrade token --sub U1 --name \"Ann Smith\" --org O1 --org-name \"Smith Farms\" --roles admin\n")
				fmt.Fprintf(cmd.OutOrStdout(), "               (or: make token)  then send  Authorization: Bearer <token>\n\n")
			})
		},
	}
}

// governProcs starts the GOMAXPROCS governor (platform/procs) when
// runtime.adaptive_procs is on and the environment does not set GOMAXPROCS
// (an operator's number wins), answering whether it started.
func governProcs(ctx context.Context, wg *sync.WaitGroup, on bool, getenv func(string) string, log logrus.FieldLogger) bool {
	if !on || getenv("GOMAXPROCS") != "" {
		return false
	}
	log.WithField("max", runtime.GOMAXPROCS(0)).Debug("GOMAXPROCS follows the load (runtime.adaptive_procs)")
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := procs.Run(ctx, func(c procs.Change) {
			log.WithFields(logrus.Fields{"from": c.From, "to": c.To, "reason": c.Reason}).Debug("GOMAXPROCS changed")
		})
		if err != nil {
			log.WithError(err).Warn("GOMAXPROCS stays at the runtime's default")
		}
	}()
	return true
}

// gcPercent is the garbage collector's target when GOGC is not set: a
// collection once the heap has grown by twice what was live after the last.
// The server's heap is small (its resident size under a burst of creates is
// ~57 MB), so Go's default of 100 collected often, and a burst of requests
// paid for collections more than for anything but SQLite: workload C (listing
// creates) at 200 made 3.5% more creates a second for 5% less CPU each, at the
// cost of ~5 MB more resident memory (L and G: no change beyond noise).
// GOMEMLIMIT still caps the heap where one is set (deploy/k8s).
const gcPercent = 200

// tuneGC sets the collector's target to gcPercent unless the environment
// sets GOGC (an operator's choice wins), answering the target in force.
func tuneGC(getenv func(string) string) int {
	if getenv("GOGC") != "" {
		p := debug.SetGCPercent(-1) // read it...
		debug.SetGCPercent(p)       // ...and leave it as it was
		return p
	}
	debug.SetGCPercent(gcPercent)
	return gcPercent
}
