package listings

import (
	"slices"
	"strconv"
	"testing"
)

// TestIndexKeys_OneKeyPerBreedAndCell: a search is filed under each breed it
// names (any breed: '*') times each cell of its area (anywhere: -1), under
// the listing type its status allows; closed-only searches under nothing.
func TestIndexKeys_OneKeyPerBreedAndCell(t *testing.T) {
	key := func(k savedCellRow) string { return k.Kind + "/" + k.Type + "/" + k.Breed + "/" + strconv.Itoa(k.Cell) }
	keys := func(f Filter) []string {
		var out []string
		for _, k := range indexKeys(f) {
			out = append(out, key(k))
		}
		slices.Sort(out)
		return out
	}
	if got := keys(Filter{Kind: "sheep", Breeds: []string{"texel", "jacob", "texel"}}); !slices.Equal(got, []string{"sheep/*/jacob/-1", "sheep/*/texel/-1"}) {
		t.Fatalf("two breeds anywhere: %v", got)
	}
	if got := keys(Filter{Status: FilterActiveSelling}); !slices.Equal(got, []string{"*/selling/*/-1"}) {
		t.Fatalf("any active selling listing: %v", got)
	}
	near := keys(Filter{Kind: "cattle", Breeds: []string{"angus"}, Near: &Point{Lat: 54.2, Lon: -1.3, Km: 20}})
	if len(near) == 0 || len(near) > maxCells {
		t.Fatalf("an area: %d keys", len(near))
	}
	for _, k := range near {
		if k[:len("cattle/*/angus/")] != "cattle/*/angus/" || k[len(k)-2:] == "-1" {
			t.Fatalf("an area's key %s", k)
		}
	}
	if got := keys(Filter{Status: StatusSold}); len(got) != 0 {
		t.Fatalf("a closed-only search is filed: %v", got)
	}
}
