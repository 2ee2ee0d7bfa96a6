package module_test

import (
	"testing"

	"github.com/agritrade/api/platform/module"
)

func TestCheckDeps(t *testing.T) {
	var nilPtr *int
	one := 1
	if err := module.CheckDeps("f", "a", &one, "b", 0, "c", "x"); err != nil {
		t.Fatalf("all present: %v", err)
	}
	err := module.CheckDeps("messaging", "DB", nilPtr, "Log", nil, "Files", &one)
	if err == nil || err.Error() != "messaging: missing DB, Log" {
		t.Fatalf("err %v, want both missing named", err)
	}
}
