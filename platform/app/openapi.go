package app

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/module"
	"github.com/gin-gonic/gin"
	"go.yaml.in/yaml/v3"
)

type document = map[string]any

func decodeDoc(name string, raw []byte) (document, error) {
	var d document
	if err := yaml.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("openapi of %s: %w", name, err)
	}
	if d == nil {
		return nil, fmt.Errorf("openapi of %s is empty", name)
	}
	return d, nil
}

// moduleDocs decodes every module's document once, with its version set from
// the module's code so that the two can never disagree.
func moduleDocs(mods []module.Module) (map[string]document, error) {
	out := make(map[string]document, len(mods))
	for _, m := range mods {
		d, err := decodeDoc(m.Name(), m.OpenAPI())
		if err != nil {
			return nil, err
		}
		obj(d, "info")["version"] = m.Version()
		addIdempotency(d)
		out[m.Name()] = d
	}
	return out, nil
}

// mergeOpenAPI joins the platform document and the modules' into one. Paths are
// disjoint by module prefix; components of the same name must be equal, and a
// clash is an error that the server tests catch before it can be served.
func mergeOpenAPI(platform []byte, mods []module.Module, docs map[string]document, build string) ([]byte, error) {
	base, err := decodeDoc(PlatformName, platform)
	if err != nil {
		return nil, err
	}
	addIdempotency(base)
	info := obj(base, "info")
	info["title"] = "AgriTrade API"
	// The merged document is versioned by what it merges: the modules'
	// release versions, as in their tags (system/v1.2.0), so that a client
	// generated from it records which contract it was built against. The
	// binary's build (git describe, "dev" from a work tree) changes with every
	// commit without the contract changing; it is kept beside, in x-build.
	versions := make([]string, 0, len(mods))
	for _, m := range mods {
		versions = append(versions, m.Name()+"/"+m.Version())
	}
	info["version"] = strings.Join(versions, " ")
	if len(versions) == 0 {
		info["version"] = build // the platform alone
	}
	info["x-build"] = build
	paths := obj(base, "paths")
	comps := obj(base, "components")
	tags := map[string]bool{}
	baseTags, _ := base["tags"].([]any)
	for _, t := range baseTags {
		if tm, ok := t.(document); ok {
			tags[fmt.Sprint(tm["name"])] = true
		}
	}
	for _, m := range mods {
		d := docs[m.Name()]
		for p, item := range obj(d, "paths") {
			if _, dup := paths[p]; dup {
				return nil, fmt.Errorf("openapi of %s: path %s defined twice", m.Name(), p)
			}
			paths[p] = item
		}
		modTags, _ := d["tags"].([]any)
		for _, t := range modTags {
			tm, ok := t.(document)
			if !ok || tags[fmt.Sprint(tm["name"])] {
				continue
			}
			tags[fmt.Sprint(tm["name"])] = true
			baseTags = append(baseTags, t)
		}
		for kind, entries := range obj(d, "components") {
			em, ok := entries.(document)
			if !ok {
				continue
			}
			dst := obj(comps, kind)
			for name, v := range em {
				if have, ok := dst[name]; ok && !reflect.DeepEqual(withoutProse(have), withoutProse(v)) {
					return nil, fmt.Errorf("openapi of %s: %s %q differs from one already defined", m.Name(), kind, name)
				}
				dst[name] = v
			}
		}
	}
	sort.SliceStable(baseTags, func(i, j int) bool {
		a, _ := baseTags[i].(document)
		b, _ := baseTags[j].(document)
		return fmt.Sprint(a["name"]) < fmt.Sprint(b["name"])
	})
	base["tags"] = baseTags
	return json.Marshal(base)
}

// withoutProse drops descriptions, summaries and examples, so that two modules'
// copies of a shared schema are compared by what clients rely on: a wording
// difference is not a contract clash, a type or field difference is.
func withoutProse(v any) any {
	switch t := v.(type) {
	case document:
		out := make(document, len(t))
		for k, e := range t {
			switch k {
			case "description", "summary", "example", "examples":
				continue
			}
			out[k] = withoutProse(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = withoutProse(e)
		}
		return out
	default:
		return v
	}
}

// obj returns the object under key, creating it when missing.
func obj(d document, key string) document {
	if v, ok := d[key].(document); ok {
		return v
	}
	v := document{}
	d[key] = v
	return v
}

// docSet holds the served JSON documents, built once in the background.
type docSet struct {
	ready  chan struct{}
	merged []byte
	byName map[string][]byte
	err    error
}

func newDocSet() *docSet { return &docSet{ready: make(chan struct{}), byName: map[string][]byte{}} }

func (d *docSet) build(platform []byte, mods []module.Module, build string) {
	defer close(d.ready)
	docs, err := moduleDocs(mods)
	if err != nil {
		d.err = err
		return
	}
	for name, doc := range docs {
		if d.byName[name], err = json.Marshal(doc); err != nil {
			d.err = err
			return
		}
	}
	d.merged, d.err = mergeOpenAPI(platform, mods, docs, build)
}

// Wait blocks until the documents are built and returns the build error.
func (d *docSet) Wait() error {
	<-d.ready
	return d.err
}

// serve answers the merged document (name "") or a module's.
func (d *docSet) serve(c *gin.Context, name string) error {
	select {
	case <-d.ready:
	case <-c.Request.Context().Done():
		return c.Request.Context().Err()
	}
	if d.err != nil {
		return apierr.Internal(d.err)
	}
	body := d.merged
	if name != "" {
		body = d.byName[name]
	}
	c.Data(http.StatusOK, "application/json", body)
	return nil
}
