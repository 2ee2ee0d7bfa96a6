package app

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/agritrade/api/platform/module"
	"github.com/getkin/kin-openapi/openapi3"
)

// LoadOpenAPI parses and validates an OpenAPI document.
func LoadOpenAPI(yamlOrJSON []byte) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(yamlOrJSON)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, err
	}
	return doc, nil
}

func moduleDocJSON(m module.Module) ([]byte, error) {
	doc, err := LoadOpenAPI(m.OpenAPI())
	if err != nil {
		return nil, fmt.Errorf("openapi of %s: %w", m.Name(), err)
	}
	doc.Info.Version = m.Version()
	return json.Marshal(doc)
}

// mergeOpenAPI joins the platform document and every module's into one. Paths
// are disjoint by module prefix; components of the same name must be equal, and
// a clash is an error that the server tests catch before it can be served.
func mergeOpenAPI(platform []byte, mods []module.Module, build string) ([]byte, error) {
	base, err := LoadOpenAPI(platform)
	if err != nil {
		return nil, fmt.Errorf("platform openapi: %w", err)
	}
	base.Info.Title = "AgriTrade API"
	base.Info.Version = build
	if base.Components == nil {
		base.Components = &openapi3.Components{}
	}
	tags := map[string]bool{}
	for _, t := range base.Tags {
		tags[t.Name] = true
	}
	for _, m := range mods {
		doc, err := LoadOpenAPI(m.OpenAPI())
		if err != nil {
			return nil, fmt.Errorf("openapi of %s: %w", m.Name(), err)
		}
		for _, path := range doc.Paths.InMatchingOrder() {
			if base.Paths.Value(path) != nil {
				return nil, fmt.Errorf("openapi of %s: path %s defined twice", m.Name(), path)
			}
			base.Paths.Set(path, doc.Paths.Value(path))
		}
		for _, t := range doc.Tags {
			if !tags[t.Name] {
				tags[t.Name] = true
				base.Tags = append(base.Tags, t)
			}
		}
		if err := mergeComponents(base.Components, doc.Components, m.Name()); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(base.Tags, func(i, j int) bool { return base.Tags[i].Name < base.Tags[j].Name })
	return json.Marshal(base)
}

func mergeComponents(dst *openapi3.Components, src *openapi3.Components, module string) error {
	if src == nil {
		return nil
	}
	if err := mergeMap(&dst.Schemas, src.Schemas, module, "schema"); err != nil {
		return err
	}
	if err := mergeMap(&dst.Responses, src.Responses, module, "response"); err != nil {
		return err
	}
	if err := mergeMap(&dst.Parameters, src.Parameters, module, "parameter"); err != nil {
		return err
	}
	if err := mergeMap(&dst.Headers, src.Headers, module, "header"); err != nil {
		return err
	}
	if err := mergeMap(&dst.RequestBodies, src.RequestBodies, module, "request body"); err != nil {
		return err
	}
	return mergeMap(&dst.SecuritySchemes, src.SecuritySchemes, module, "security scheme")
}

// mergeMap copies src entries into dst; an entry already there must be equal
// in JSON, because both documents' $refs point at the same name.
func mergeMap[M ~map[string]V, V any](dst *M, src M, module, kind string) error {
	if *dst == nil {
		*dst = M{}
	}
	for name, v := range src {
		if have, ok := (*dst)[name]; ok {
			a, _ := json.Marshal(have)
			b, _ := json.Marshal(v)
			if string(a) != string(b) {
				return fmt.Errorf("openapi of %s: %s %q differs from one already defined", module, kind, name)
			}
			continue
		}
		(*dst)[name] = v
	}
	return nil
}
