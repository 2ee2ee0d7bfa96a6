package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// route is one method and path pattern of the engine.
type route struct{ Method, Path string }

// engineRoutes lists every route of the engine, as `agritrade routes` does.
func engineRoutes(t *testing.T) []route {
	t.Helper()
	infos, err := engineRouteInfos(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := make([]route, 0, len(infos))
	for _, r := range infos {
		out = append(out, route{r.Method, r.Path})
	}
	return out
}

// TestRoutesCommand: every route is printed with the function that serves
// it, not with the adapter every handler goes through.
func TestRoutesCommand(t *testing.T) {
	cmd := newRoot()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"routes"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(engineRoutes(t)) {
		t.Fatalf("%d lines for %d routes:\n%s", len(lines), len(engineRoutes(t)), out.String())
	}
	handlers := map[string]string{}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) == 3 {
			handlers[f[0]+" "+f[1]] = f[2]
		}
	}
	for route, want := range map[string]string{
		"POST /logistics/v1/loads/batch": "logistics/internal/imports.(*Handler).upload",
		"GET /livestock/v1/listings/:id": "livestock/internal/listings.(*Handler).get",
		"DELETE /system/v1/files/:id":    "system/internal/files.(*Handler).archive",
	} {
		if handlers[route] != want {
			t.Errorf("%s: handler %q, want %q", route, handlers[route], want)
		}
	}
	for _, l := range lines {
		if strings.Contains(l, "httpx.H.func") || len(strings.Fields(l)) != 3 {
			t.Errorf("line without its handler: %q", l)
		}
	}
}
