package main

import (
	"strings"
	"testing"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
)

// TestMergedOpenAPIIsValid checks the document served at /openapi.json with
// every module mounted: kin-openapi must load and validate it, and the routes
// the engine serves must all be documented.
func TestMergedOpenAPIIsValid(t *testing.T) {
	s := testkit.NewServer(t, testkit.DB(t, testkit.SQLite), func(p *app.Platform) []module.Module { return buildModules(p) })
	spec := testkit.LoadSpec(t, s.App)
	for _, r := range s.App.Engine.Routes() {
		if r.Path == "/docs/*asset" {
			continue
		}
		if strings.HasSuffix(r.Path, "/v1/openapi.json") {
			r.Path = "/{module}/v1/openapi.json" // one templated path documents all three
		}
		if spec.Doc.Paths.Find(openAPIPath(r.Path)) == nil {
			t.Errorf("route %s %s is not in the OpenAPI document", r.Method, r.Path)
		}
	}
}

// openAPIPath turns gin's :id into OpenAPI's {id}.
func openAPIPath(p string) string {
	out := []byte{}
	for i := 0; i < len(p); i++ {
		if p[i] != ':' {
			out = append(out, p[i])
			continue
		}
		j := i + 1
		for j < len(p) && p[j] != '/' {
			j++
		}
		out = append(out, '{')
		out = append(out, p[i+1:j]...)
		out = append(out, '}')
		i = j - 1
	}
	return string(out)
}
