package admin

import (
	"strings"
	"testing"

	"github.com/agritrade/api/platform/apierr"
)

func TestValidate(t *testing.T) {
	yes := true
	c, err := ClearRequest{Keys: []string{" refdata:countries "}, Prefixes: []string{"refdata:"}, Secrets: &yes}.Validate()
	if err != nil || c.Keys[0] != "refdata:countries" || c.Prefixes[0] != "refdata:" || !c.Secrets || c.Flush {
		t.Fatalf("%+v %v", c, err)
	}
	if c, err := (ClearRequest{Flush: &yes}).Validate(); err != nil || !c.Flush {
		t.Fatalf("flush: %+v %v", c, err)
	}
	paths := func(_ Clear, err error) string {
		e, ok := apierr.As(err)
		if !ok || e.Code != apierr.CodeValidation {
			t.Fatalf("error %v", err)
		}
		var p []string
		for _, v := range e.Validation {
			p = append(p, v.Path)
		}
		return strings.Join(p, " ")
	}
	if got := paths(ClearRequest{}.Validate()); got != "keys" {
		t.Fatalf("empty request: %s", got)
	}
	long := strings.Repeat("k", MaxKeyLen+1)
	if got := paths(ClearRequest{Keys: []string{"ok", "", long}, Prefixes: []string{" "}}.Validate()); got != "keys[1] keys[2] prefixes[0]" {
		t.Fatalf("bad entries: %s", got)
	}
	if got := paths(ClearRequest{Keys: make([]string, MaxKeys+1)}.Validate()); got != "keys" {
		t.Fatalf("too many: %s", got)
	}
}
