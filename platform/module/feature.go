package module

import (
	"fmt"
	"reflect"
	"strings"
)

// A feature (a vertical slice under a module's internal/) is wired one way:
// New(Deps) (*Feature, error) builds its store, service and handlers and
// refuses missing dependencies, then (*Feature).Mount(group) binds its
// routes. The module's New calls the constructors, its Mount the Mounts.

// CheckDeps refuses the missing dependencies of a feature's constructor:
// named lists name, value pairs; a nil value (nil pointer, interface, map,
// slice or func) is missing. The error names every missing one.
func CheckDeps(feature string, named ...any) error {
	var missing []string
	for i := 0; i+1 < len(named); i += 2 {
		if isNil(named[i+1]) {
			missing = append(missing, fmt.Sprint(named[i]))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: missing %s", feature, strings.Join(missing, ", "))
	}
	return nil
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return rv.IsNil()
	default:
		return false
	}
}
