// Package categories is the listing category tree of the Livestock module: the
// kinds of listing, the breeds and classes of sheep, cattle and working dogs, and
// the kinds of feed and bedding. Listings refer to categories by id
// (categoryIds) and take the enumerations of their properties (breedType, sheep
// and cattle type) from the values of this tree, so the two never disagree.
package categories

import (
	"slices"
	"strings"
)

// Kind is the kind of a listing (and of the categories that apply to it).
type Kind string

// The five kinds of listing of the seed.
const (
	Sheep      Kind = "sheep"
	Cattle     Kind = "cattle"
	WorkingDog Kind = "working-dog"
	Feed       Kind = "feed"
	Bedding    Kind = "bedding"
)

// Kinds lists every kind, in the order the API documents them.
var Kinds = []Kind{Sheep, Cattle, WorkingDog, Feed, Bedding}

// KindNames lists the kinds as strings (for enumeration checks).
func KindNames() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = string(k)
	}
	return out
}

// HasProperties tells whether listings of the kind carry a properties object:
// feed and bedding listings do not (seed: "same envelope without properties").
func (k Kind) HasProperties() bool { return k == Sheep || k == Cattle || k == WorkingDog }

// Group says what a category stands for.
type Group string

// The groups of the tree.
const (
	// GroupKind is the root category of a kind ("Sheep").
	GroupKind Group = "kind"
	// GroupBreed categories give the values of properties.breedType.
	GroupBreed Group = "breed"
	// GroupType categories give the values of properties.type (sheep and cattle classes).
	GroupType Group = "type"
	// GroupFeed categories are kinds of feed and forage.
	GroupFeed Group = "feed"
	// GroupBedding categories are kinds of bedding.
	GroupBedding Group = "bedding"
)

// Category is one node of the tree, as GET /livestock/v1/categories answers it.
type Category struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Kind     Kind   `json:"kind"`
	Group    Group  `json:"group"`
	ParentID *int   `json:"parentId"`
	// Value is the machine value the category stands for: for breeds the value of
	// properties.breedType, for sheep and cattle classes a value of properties.type.
	Value string `json:"value"`
}

// All returns the reference tree, parents before their children.
func All() []Category {
	out := make([]Category, len(tree))
	copy(out, tree)
	return out
}

// Values lists the values of a kind's categories of a group, in tree order and
// without duplicates: Values(Sheep, GroupBreed) is the breedType enumeration of
// sheep listings. The list is shared: callers must not change it. (Each
// listing create checks its breed against one; listed afresh every time, it
// was a tenth of a create's allocations.)
func Values(kind Kind, group Group) []string { return values[kindGroup{kind, group}] }

type kindGroup struct {
	kind  Kind
	group Group
}

// values are the lists Values answers, built once from the compiled-in tree.
var values = func() map[kindGroup][]string {
	out := map[kindGroup][]string{}
	for _, c := range tree {
		k := kindGroup{c.Kind, c.Group}
		if !slices.Contains(out[k], c.Value) {
			out[k] = append(out[k], c.Value)
		}
	}
	return out
}()

// slug turns a name into a value: lower case, words joined by hyphens, only
// ASCII letters and digits ("Rouge de l'Ouest" → "rouge-de-l-ouest").
func slug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case r == 'é' || r == 'è':
			b.WriteRune('e')
			dash = false
		default:
			if b.Len() > 0 && !dash {
				b.WriteByte('-')
				dash = true
			}
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}
