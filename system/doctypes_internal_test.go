package system

import (
	"slices"
	"strings"
	"testing"

	"github.com/agritrade/api/system/internal/files"
)

// TestDocumentTypesMatchOpenAPI: the kinds handed to the file store at
// wiring (files.DocumentTypes) are the FileType enum of openapi.yaml, so the
// document and the check cannot drift apart.
func TestDocumentTypesMatchOpenAPI(t *testing.T) {
	var enum []string
	in, inEnum := false, false
	for line := range strings.Lines(string(openapiYAML)) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "    FileType:":
			in = true
		case in && strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     "):
			in = false // the next schema
		case in && strings.TrimSpace(line) == "enum:":
			inEnum = true
		case in && inEnum && strings.HasPrefix(strings.TrimSpace(line), "- "):
			enum = append(enum, strings.TrimPrefix(strings.TrimSpace(line), "- "))
		case inEnum:
			inEnum = false
		}
	}
	if len(enum) == 0 {
		t.Fatal("no FileType enum in openapi.yaml")
	}
	if !slices.Equal(enum, files.DocumentTypes) {
		t.Fatalf("openapi.yaml FileType enum %v, files.DocumentTypes %v", enum, files.DocumentTypes)
	}
}
