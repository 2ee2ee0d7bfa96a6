package refdata

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

func dataFS(t *testing.T) fstest.MapFS {
	t.Helper()
	sub, err := fs.Sub(dataFiles, "data")
	if err != nil {
		t.Fatal(err)
	}
	m := fstest.MapFS{}
	err = fs.WalkDir(sub, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, path)
		m[path] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDatasetIsValid(t *testing.T) {
	d, err := LoadDataset()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Version) != 64 {
		t.Fatalf("version %q", d.Version)
	}
	// Every grade has a default specification, every region a group.
	for _, c := range d.Commodities {
		for _, it := range c.Items {
			for _, ty := range it.Types {
				for _, g := range ty.Grades {
					if len(d.Measures[g.ID]) == 0 {
						t.Errorf("grade %d (%s %s %s) has no specification", g.ID, it.Name, ty.Name, g.Name)
					}
				}
			}
		}
	}
	groups := regionGroups(d.Regions)
	seen := 0
	for _, g := range groups {
		seen += len(strings.Split(g.Regions, ","))
	}
	if seen != len(d.Regions) {
		t.Fatalf("region groups cover %d of %d regions", seen, len(d.Regions))
	}
	again, err := LoadDataset()
	if err != nil || again.Version != d.Version {
		t.Fatal("the version is not stable")
	}
}

func TestDatasetChecks(t *testing.T) {
	cases := []struct {
		name, file, old, new, want string
	}{
		{"duplicate grade id", "commodities.json", `{"id": 112, "name": "Group 2"`, `{"id": 111, "name": "Group 2"`, "duplicate grade 111"},
		{"unknown spec set", "commodities.json", `"spec": "wheat-feed"`, `"spec": "wheat-fodder"`, "unknown specification set"},
		{"unknown country", "commodities.json", `"countryISO": "IE"`, `"countryISO": "XI"`, "bad group"},
		{"bad alpha-3", "countries.json", `"iso3": "GBR"`, `"iso3": "GB"`, "bad or duplicate code"},
		{"region of another country", "regions.csv", "GB,GB-KEN,Kent", "IE,GB-KEN,Kent", "line"},
		{"negative tb", "regions.csv", "GB,GB-KEN,Kent,South East,England,48", "GB,GB-KEN,Kent,South East,England,-1", "tb must be"},
		{"range outside the scale", "specifications.json", `{"spec": 1, "max": 9}`, `{"spec": 1, "max": 190}`, "outside its scale"},
		{"ex-farm grade of another commodity", "trading.json", `"grades": [121]`, `"grades": [211]`, "is not a grade of commodity 1"},
		{"unknown field", "conversions.json", `"tonne_kg": 1000`, `"tonne_kg": "a lot"`, "conversions.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := dataFS(t)
			orig := string(m[c.file].Data)
			if !strings.Contains(orig, c.old) {
				t.Fatalf("%s does not contain %q", c.file, c.old)
			}
			m[c.file] = &fstest.MapFile{Data: []byte(strings.Replace(orig, c.old, c.new, 1))}
			_, err := ParseDataset(m)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one about %q", err, c.want)
			}
		})
	}
}

func TestNewVarietyRow(t *testing.T) {
	r, problems := NewVarietyRow(2, "1.0", "Milling", "Group 1", "Skyfall")
	if len(problems) != 0 || r.CommodityID != 1 || r.Reference() != "1/Milling/Group 1" {
		t.Fatalf("%+v %v", r, problems)
	}
	for _, id := range []string{"0", "-3", "1.5", "x", "1e99"} {
		if _, problems := NewVarietyRow(2, id, "a", "b", "c"); len(problems) != 1 {
			t.Errorf("id %q: %v", id, problems)
		}
	}
	if _, problems := NewVarietyRow(2, "", "", "", ""); len(problems) != 4 {
		t.Fatalf("%v", problems)
	}
}

// Import cells that cannot be stored refuse their row, naming the column.
func TestNewVarietyRow_RefusesCellsThatCannotBeStored(t *testing.T) {
	for _, tc := range []struct{ id, typ, grade, variety, want string }{
		{"1", "Milling", "Group 1", "Sky\x00fall", "variety must not contain NUL characters (U+0000)"},
		{"1", "Milling", "Group 1", "Sky\xfffall", "variety must be valid UTF-8 text"},
		{"1", "Mill\xc3", "Group 1", "Skyfall", "type must be valid UTF-8 text"},
		{"1\x00", "Milling", "Group 1", "Skyfall", "commodityId must not contain NUL characters (U+0000)"},
	} {
		r, problems := NewVarietyRow(2, tc.id, tc.typ, tc.grade, tc.variety)
		if len(problems) != 1 || problems[0] != tc.want || r.Variety != "" {
			t.Errorf("%q: %+v %q, want %q", tc, r, problems, tc.want)
		}
	}
}
