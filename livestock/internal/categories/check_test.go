package categories

import (
	"context"
	"testing"

	"github.com/agritrade/api/platform/testkit"
)

// TestCheck_KnownIDsFromMemoryNewerFromStore: the ids of the compiled-in tree
// are checked without the database (its table is left empty here), and an id
// only the database knows (seeded by a newer release) is found there.
func TestCheck_KnownIDsFromMemoryNewerFromStore(t *testing.T) {
	ctx := context.Background()
	bdb := testkit.DB(t, testkit.SQLite)
	if _, err := bdb.NewCreateTable().Model((*row)(nil)).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var sheep, cattle int
	for _, c := range All() {
		if c.Kind == Sheep && sheep == 0 {
			sheep = c.ID
		}
		if c.Kind == Cattle && cattle == 0 {
			cattle = c.ID
		}
	}
	const newer = 990001
	if _, err := bdb.NewInsert().Model(&row{ID: newer, Name: "Newer breed", Kind: string(Sheep), Grp: string(GroupBreed), Value: "newer"}).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	svc := NewService(NewStore(bdb))
	errs, err := svc.Check(ctx, Sheep, []int{sheep, cattle, newer, 990002})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range errs {
		got[e.Path] = e.Code
	}
	want := map[string]string{"[1]": "kind", "[3]": "not_found"}
	if len(got) != len(want) || got["[1]"] != "kind" || got["[3]"] != "not_found" {
		t.Fatalf("field errors %v, want %v", got, want)
	}
}
