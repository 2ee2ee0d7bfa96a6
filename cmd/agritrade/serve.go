package main

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/agritrade/api/cmd/internal/buildinfo"
	"github.com/agritrade/api/platform/app"
	"github.com/spf13/cobra"
)

func newServe(f *rootFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Migrate the database, then serve the API until SIGTERM",
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := time.Now()
			ctx := cmd.Context()
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
