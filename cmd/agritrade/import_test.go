package main

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// geonamesPlaces is a small dump in the GeoNames geoname table format.
const geonamesPlaces = "2656173\tAppleby-in-Westmorland\tAppleby-in-Westmorland\t\t54.57704\t-2.48978\tP\tPPL\tGB\t\tENG\tD5\t\t\t2862\t\t139\tEurope/London\t2024-03-01\n" +
	"2643179\tMardale Fell\tMardale Fell\t\t54.49\t-2.83\tT\tHLL\tGB\t\tENG\t\t\t\t0\t\t700\tEurope/London\t2024-03-01\n" +
	"2647793\tGreat Asby\tGreat Asby\t\t54.52\t-2.47\tP\tPPL\tGB\t\tENG\tD5\t\t\t300\t\t200\tEurope/London\t2024-03-01\n"

func runCLI(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		t.Fatalf("agritrade %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func TestImportGazetteerCommand(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AGRITRADE_DATA_DIR", filepath.Join(dir, "data"))
	t.Setenv("AGRITRADE_DB_DSN", "")
	t.Chdir(dir)

	// A zip as GeoNames publishes them: the data file and a readme.
	zipPath := filepath.Join(dir, "GB.zip")
	f, err := os.Create(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, body := range map[string]string{"readme.txt": "GeoNames readme\n", "GB.txt": geonamesPlaces} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	out := runCLI(t, "", "import", "gazetteer", zipPath)
	if !strings.Contains(out, "imported 2 rows (geonames-places)") || !strings.Contains(out, "rows/s") || !strings.Contains(out, "1 lines skipped") {
		t.Fatalf("output %q", out)
	}
	// Standard input, a postal code dump this time.
	postal := "GB\tCA16 6XX\tAppleby-in-Westmorland\tEngland\tENG\tCumbria\t\tEden District\t\t54.5771\t-2.4898\t6\n"
	out = runCLI(t, postal, "import", "gazetteer", "-")
	if !strings.Contains(out, "imported 1 rows (geonames-postcodes)") {
		t.Fatalf("output %q", out)
	}
	// A file that is not a dump fails with a message.
	bad := filepath.Join(dir, "bad.txt")
	_ = os.WriteFile(bad, []byte("a,b,c\n"), 0o600)
	root := newRoot()
	root.SetOut(&bytes.Buffer{})
	root.SetArgs([]string{"import", "gazetteer", bad})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "columns") {
		t.Fatalf("err %v, want the column count explained", err)
	}
}
