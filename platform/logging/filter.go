package logging

import (
	"fmt"
	"regexp"
	"strings"
)

// Filter selects components by namespace patterns, as in "files,loads:*,-loads:import":
//   - "files" selects the component files exactly;
//   - "loads:*" selects loads and everything below it (loads:import, loads:search:csv);
//   - "*" selects everything;
//   - a leading "-" excludes, and exclusions win over inclusions.
//
// An empty filter, or one made only of exclusions, selects every component that
// is not excluded.
type Filter struct {
	include []pattern
	exclude []pattern
}

type pattern struct {
	name string // without the trailing ":*"
	tree bool   // "name:*": the name and all below it
	all  bool   // "*"
}

var componentPattern = regexp.MustCompile(`^(\*|[a-z0-9_.-]+(:[a-z0-9_.-]+)*(:\*)?)$`)

// ParseFilter parses a comma-separated filter; blanks between items are ignored.
func ParseFilter(s string) (Filter, error) {
	var f Filter
	for _, item := range strings.Split(s, ",") {
		item = strings.ToLower(strings.TrimSpace(item))
		if item == "" {
			continue
		}
		neg := strings.HasPrefix(item, "-")
		item = strings.TrimPrefix(item, "-")
		if !componentPattern.MatchString(item) {
			return Filter{}, fmt.Errorf("filter item %q: want name, name:*, -name or *", item)
		}
		p := pattern{all: item == "*"}
		if !p.all {
			p.tree = strings.HasSuffix(item, ":*")
			p.name = strings.TrimSuffix(item, ":*")
		}
		if neg {
			f.exclude = append(f.exclude, p)
		} else {
			f.include = append(f.include, p)
		}
	}
	return f, nil
}

// Allows tells whether a component passes the filter.
func (f Filter) Allows(component string) bool {
	component = strings.ToLower(component)
	for _, p := range f.exclude {
		if p.matches(component) {
			return false
		}
	}
	if len(f.include) == 0 {
		return true
	}
	for _, p := range f.include {
		if p.matches(component) {
			return true
		}
	}
	return false
}

func (p pattern) matches(component string) bool {
	switch {
	case p.all:
		return true
	case component == p.name:
		return true
	case p.tree:
		return strings.HasPrefix(component, p.name+":")
	default:
		return false
	}
}

// String renders the filter in its canonical form.
func (f Filter) String() string {
	parts := make([]string, 0, len(f.include)+len(f.exclude))
	for _, p := range f.include {
		parts = append(parts, p.String())
	}
	for _, p := range f.exclude {
		parts = append(parts, "-"+p.String())
	}
	return strings.Join(parts, ",")
}

func (p pattern) String() string {
	switch {
	case p.all:
		return "*"
	case p.tree:
		return p.name + ":*"
	default:
		return p.name
	}
}
