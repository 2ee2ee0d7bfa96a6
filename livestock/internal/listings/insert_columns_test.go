package listings

import (
	"reflect"
	"slices"
	"testing"

	"github.com/agritrade/api/platform/testkit"
)

// TestInsertColumns_AreTheRowsColumns: the prepared insert names every
// column of the row model bun writes, in the order insertArgs gives them, so
// a column added to listingRow cannot be left out of it.
func TestInsertColumns_AreTheRowsColumns(t *testing.T) {
	bdb := testkit.DB(t, testkit.SQLite)
	table := bdb.Dialect().Tables().Get(reflect.TypeFor[listingRow]())
	var want []string
	for _, f := range table.Fields {
		if !f.Tag.HasOption("scanonly") {
			want = append(want, f.Name)
		}
	}
	if !slices.Equal(insertColumns, want) {
		t.Fatalf("insertColumns\n %v\nthe model's columns\n %v", insertColumns, want)
	}
	if n := len(insertArgs(&listingRow{})); n != len(insertColumns) {
		t.Fatalf("insertArgs gives %d values for %d columns", n, len(insertColumns))
	}
}
