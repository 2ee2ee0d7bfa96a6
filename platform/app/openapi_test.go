package app

import (
	"strings"
	"testing"

	"github.com/agritrade/api/platform/module"
)

type docModule struct {
	module.Base
}

func (docModule) Mount(module.Routes) {}

func mod(name, yaml string) module.Module {
	return docModule{module.Base{ModuleName: name, ModuleVersion: "1.2.3", Document: []byte(yaml)}}
}

const platformDoc = "openapi: 3.0.3\ninfo: {title: p, version: x}\npaths:\n  /healthz: {get: {responses: {'200': {description: ok}}}}\n"

func schemaDoc(path, desc, typ string) string {
	return "openapi: 3.0.3\ninfo: {title: m, version: x}\ntags: [{name: t}]\npaths:\n  " + path +
		": {get: {responses: {'200': {description: ok}}}}\ncomponents:\n  schemas:\n    Location:\n      type: object\n      description: " + desc +
		"\n      properties:\n        lat: {type: " + typ + "}\n"
}

func merge(t *testing.T, mods ...module.Module) (string, error) {
	t.Helper()
	docs, err := moduleDocs(mods)
	if err != nil {
		return "", err
	}
	b, err := mergeOpenAPI([]byte(platformDoc), mods, docs, "build-1")
	return string(b), err
}

func TestMergeKeepsPathsAndSharedSchemas(t *testing.T) {
	out, err := merge(t, mod("a", schemaDoc("/a/v1/x", "one wording", "number")), mod("b", schemaDoc("/b/v1/y", "another wording", "number")))
	if err != nil {
		t.Fatalf("prose-only differences must merge: %v", err)
	}
	for _, want := range []string{`"/healthz"`, `"/a/v1/x"`, `"/b/v1/y"`, `"Location"`, `"version":"a/1.2.3 b/1.2.3"`, `"x-build":"build-1"`} {
		if !strings.Contains(out, want) {
			t.Errorf("merged document lacks %s", want)
		}
	}
}

func TestMergeRefusesRealClashes(t *testing.T) {
	if _, err := merge(t, mod("a", schemaDoc("/a/v1/x", "d", "number")), mod("b", schemaDoc("/b/v1/y", "d", "string"))); err == nil {
		t.Fatal("schemas of different types merged")
	}
	if _, err := merge(t, mod("a", schemaDoc("/a/v1/x", "d", "number")), mod("b", schemaDoc("/a/v1/x", "d", "number"))); err == nil {
		t.Fatal("a path defined twice merged")
	}
}
