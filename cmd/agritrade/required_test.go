package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/getkin/kin-openapi/openapi3"
)

// TestRequiredBodyMembersAreEnforced: "required" in a JSON request body's
// schema is what the server enforces. For every operation with a JSON body,
// its documented example (sent unchanged it works: the docs browser test) is
// sent once without each required member, as the /docs token against the
// demo data, and must answer 400 naming that member. A member marked
// required that the server lets pass, or one it requires but the document
// does not say, is a contract that lies to generated clients.
func TestRequiredBodyMembersAreEnforced(t *testing.T) {
	s := testkit.NewServer(t, testkit.DB(t, testkit.SQLite), func(p *app.Platform) []module.Module { return buildModules(p) })
	d := &demo{h: s.App.Engine, secret: []byte(testkit.Secret), out: io.Discard, base: s.Config.BaseURL, fixedIDs: true}
	if err := d.run(context.Background(), false); err != nil {
		t.Fatalf("demo: %v", err)
	}
	token := s.Token(demoDocs)
	spec := testkit.LoadSpec(t, s.App)
	checked := 0
	for _, path := range spec.Doc.Paths.InMatchingOrder() {
		item := spec.Doc.Paths.Value(path)
		for method, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			mt := op.RequestBody.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
				continue
			}
			example := mt.Example
			if example == nil {
				example = mt.Schema.Value.Example
			}
			if example == nil {
				t.Errorf("%s %s: the JSON body has no example", method, path)
				continue
			}
			schema, prefix := variantOf(mt.Schema.Value, example), ""
			if schema.Type.Is("array") && schema.Items != nil && schema.Items.Value != nil {
				schema, prefix = schema.Items.Value, "[0]."
			}
			url := withPathExamples(path, append(item.Parameters, op.Parameters...))
			for _, member := range requiredOf(schema) {
				body := withoutMember(t, example, member)
				name := fmt.Sprintf("%s_%s/400_without_%s", method, path, member)
				t.Run(name, func(t *testing.T) {
					res := s.Do(testkit.Request{Method: method, Path: url, Token: token, JSON: body})
					if res.Status != http.StatusBadRequest {
						t.Fatalf("answered %d, want 400 naming %s%s: %s", res.Status, prefix, member, res.Body)
					}
					if paths := res.Error(t).Paths(); !slices.Contains(paths, prefix+member) {
						t.Fatalf("the 400 names %v, not %s%s", paths, prefix, member)
					}
				})
				checked++
			}
		}
	}
	if checked < 40 {
		t.Fatalf("only %d required members checked; the documents require more", checked)
	}
}

// variantOf is the oneOf/anyOf variant of s that the example is (one
// object, or a list of them), or s itself.
func variantOf(s *openapi3.Schema, example any) *openapi3.Schema {
	_, isList := example.([]any)
	for _, v := range append(slices.Clone(s.OneOf), s.AnyOf...) {
		if v.Value != nil && v.Value.Type.Is("array") == isList {
			return v.Value
		}
	}
	return s
}

// requiredOf lists a schema's required members, those of its allOf parts too.
func requiredOf(s *openapi3.Schema) []string {
	out := slices.Clone(s.Required)
	for _, part := range s.AllOf {
		if part.Value != nil {
			out = append(out, requiredOf(part.Value)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// withoutMember is a copy of the example (an object, or a list whose first
// object loses it) without the member.
func withoutMember(t *testing.T, example any, member string) []byte {
	t.Helper()
	raw, err := json.Marshal(example)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	switch x := v.(type) {
	case map[string]any:
		delete(x, member)
	case []any:
		if len(x) > 0 {
			if m, ok := x[0].(map[string]any); ok {
				delete(m, member)
			}
		}
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withPathExamples fills the path's parameters with their examples.
func withPathExamples(path string, params openapi3.Parameters) string {
	for _, ref := range params {
		if p := ref.Value; p != nil && p.In == "path" && p.Example != nil {
			path = strings.ReplaceAll(path, "{"+p.Name+"}", fmt.Sprint(p.Example))
		}
	}
	return path
}
