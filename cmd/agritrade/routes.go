package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/httpx"
	"github.com/spf13/cobra"
)

// routeInfo is one route of the engine and the function that serves it.
type routeInfo struct {
	Method, Path, Handler string
}

func newRoutes() *cobra.Command {
	return &cobra.Command{
		Use:   "routes",
		Short: "Print every route with the package and function that serves it",
		Long: "Print every route of the engine (method, path, handler). The routes are fixed in code, so the\n" +
			"command builds the application over a throw-away SQLite database and touches no configured store.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			routes, err := engineRouteInfos(cmd.Context())
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, r := range routes {
				fmt.Fprintf(w, "%s\t%s\t%s\n", r.Method, r.Path, r.Handler)
			}
			return w.Flush()
		},
	}
}

// engineRouteInfos builds the application as serve does, over a throw-away
// SQLite in a temporary directory, and lists its routes sorted by path.
func engineRouteInfos(ctx context.Context) ([]routeInfo, error) {
	dir, err := os.MkdirTemp("", "agritrade-routes-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	cfg := config.Default()
	cfg.DataDir = dir
	cfg.Auth.Secret = "routes-listing-only"
	p, err := app.Open(ctx, cfg, app.Options{LogOutput: io.Discard})
	if err != nil {
		return nil, err
	}
	defer func() { _ = p.Close() }()
	srv, err := app.NewServer(p, "routes", buildModules(p)...)
	if err != nil {
		return nil, err
	}
	var out []routeInfo
	for _, r := range srv.Engine.Routes() {
		name := strings.TrimPrefix(httpx.HandlerName(r), "github.com/agritrade/api/")
		out = append(out, routeInfo{Method: r.Method, Path: r.Path, Handler: strings.TrimSuffix(name, "-fm")})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Method < out[j].Method
	})
	return out, nil
}
