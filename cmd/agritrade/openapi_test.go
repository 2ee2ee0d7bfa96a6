package main

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
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

// TestSortByEnumsMatchTheServer holds every documented sortBy enum to the
// server's whitelist: each listed value answers 200, and a value the document
// does not list answers 400 naming sortBy. A field added to a whitelist but
// not to the document (or the other way round) fails here.
func TestSortByEnumsMatchTheServer(t *testing.T) {
	s := testkit.NewServer(t, testkit.DB(t, testkit.SQLite), func(p *app.Platform) []module.Module { return buildModules(p) })
	spec := testkit.LoadSpec(t, s.App)
	admin := demoFarmer
	admin.Roles = []string{"admin"} // the admin report lists sort too
	token := s.Token(admin)
	checked := 0
	for path, item := range spec.Doc.Paths.Map() {
		op := item.Get
		if op == nil || strings.Contains(path, "{") {
			continue
		}
		var values []any
		query := url.Values{}
		for _, ref := range op.Parameters {
			p := ref.Value
			if p == nil || p.In != "query" {
				continue
			}
			if p.Name == "sortBy" && p.Schema != nil && p.Schema.Value != nil {
				values = p.Schema.Value.Enum
				continue
			}
			// Distance sorting needs the point and radius; the others are required.
			if p.Required || p.Name == "latitude" || p.Name == "longitude" || p.Name == "distanceKm" {
				query.Set(p.Name, fmt.Sprint(p.Example))
			}
		}
		if len(values) == 0 {
			continue
		}
		for _, v := range values {
			name := fmt.Sprint(v)
			t.Run(path+"/200_"+name, func(t *testing.T) {
				q := cloneValues(query)
				q.Set("sortBy", name)
				res := s.Do(testkit.Request{Method: http.MethodGet, Path: path + "?" + q.Encode(), Token: token})
				if res.Status != http.StatusOK {
					t.Fatalf("sortBy=%s: status %d, want 200: %s", name, res.Status, res.Body)
				}
			})
			checked++
		}
		t.Run(path+"/400_undocumented", func(t *testing.T) {
			q := cloneValues(query)
			q.Set("sortBy", "notADocumentedField")
			res := s.Do(testkit.Request{Method: http.MethodGet, Path: path + "?" + q.Encode(), Token: token})
			if res.Status != http.StatusBadRequest || !strings.Contains(string(res.Body), "sortBy") {
				t.Fatalf("sortBy=notADocumentedField: status %d, want 400 naming sortBy: %s", res.Status, res.Body)
			}
			// The 400 lists the server's whitelist: it must be the documented enum.
			msg := res.Error(t).Message
			i := strings.Index(msg, "sortBy must be one of ")
			if i < 0 {
				t.Fatalf("the 400 does not list the allowed values: %q", msg)
			}
			allowed := strings.Split(strings.TrimSpace(msg[i+len("sortBy must be one of "):]), ", ")
			var documented []string
			for _, v := range values {
				documented = append(documented, fmt.Sprint(v))
			}
			slices.Sort(allowed)
			slices.Sort(documented)
			if !slices.Equal(allowed, documented) {
				t.Fatalf("the server sorts by %v, the document lists %v", allowed, documented)
			}
		})
	}
	if checked == 0 {
		t.Fatal("no operation documents a sortBy enum")
	}
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
