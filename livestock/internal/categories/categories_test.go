package categories

import (
	"slices"
	"testing"
)

func TestSlug(t *testing.T) {
	for name, want := range map[string]string{
		"Texel": "texel", "Rouge de l'Ouest": "rouge-de-l-ouest", "Montbéliarde": "montbeliarde",
		"Brewers' grains": "brewers-grains", "  Calf and lamb creep feed ": "calf-and-lamb-creep-feed",
	} {
		if got := slug(name); got != want {
			t.Errorf("slug(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestTree checks the reference data: every kind has a root, values are unique
// within a kind and group (they are enumerations), names unique under a parent.
func TestTree(t *testing.T) {
	all := All()
	for _, k := range Kinds {
		roots := 0
		for _, c := range all {
			if c.Kind == k && c.ParentID == nil {
				roots++
				if c.Group != GroupKind || c.Value != string(k) {
					t.Errorf("root %+v", c)
				}
			}
		}
		if roots != 1 {
			t.Errorf("%s has %d roots", k, roots)
		}
	}
	seen := map[string]int{}
	names := map[string]bool{}
	for _, c := range all {
		key := string(c.Kind) + "/" + string(c.Group) + "/" + c.Value
		if id, dup := seen[key]; dup {
			t.Errorf("value %s of %d repeats %d", key, c.ID, id)
		}
		seen[key] = c.ID
		parent := 0
		if c.ParentID != nil {
			parent = *c.ParentID
		}
		nameKey := string(rune(parent)) + c.Name
		if names[nameKey] {
			t.Errorf("name %q twice under %d", c.Name, parent)
		}
		names[nameKey] = true
	}
	for _, k := range []Kind{Sheep, Cattle, WorkingDog} {
		breeds := Values(k, GroupBreed)
		if len(breeds) < 10 || breeds[0] != "cross" || !slices.Contains(breeds, "other") {
			t.Errorf("%s breeds %v", k, breeds)
		}
	}
	if got := Values(Feed, GroupBreed); len(got) != 0 {
		t.Errorf("feed has breeds %v", got)
	}
}
