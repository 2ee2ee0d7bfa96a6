package main

import (
	"context"
	"io"
	"sort"
	"testing"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/config"
)

// route is one method and path pattern of the engine.
type route struct{ Method, Path string }

// engineRoutes builds the application as serve does (over a throw-away
// SQLite) and lists every route of its engine.
func engineRoutes(t *testing.T) []route {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Auth.Secret = faultSecret
	p, err := app.Open(context.Background(), cfg, app.Options{LogOutput: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	srv, err := app.NewServer(p, "routes", buildModules(p)...)
	if err != nil {
		t.Fatal(err)
	}
	var out []route
	for _, r := range srv.Engine.Routes() {
		out = append(out, route{r.Method, r.Path})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path+out[i].Method < out[j].Path+out[j].Method })
	return out
}
