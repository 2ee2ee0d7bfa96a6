package locations_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system/internal/locations"
	"github.com/agritrade/api/system/internal/locations/gazetteer"
	"github.com/agritrade/api/system/internal/locations/place"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
)

// placeLine writes one line of the GeoNames geoname table (19 columns).
func placeLine(id int, name string, lat, lon float64, class, code, country, admin1 string, pop int) string {
	return strings.Join([]string{
		fmt.Sprint(id), name, name, "", fmt.Sprintf("%.5f", lat), fmt.Sprintf("%.5f", lon), class, code, country, "",
		admin1, "", "", "", fmt.Sprint(pop), "", "120", "Europe/London", "2024-03-01",
	}, "\t")
}

// postcodeLine writes one line of the GeoNames postal code dump (12 columns).
func postcodeLine(country, code, place, admin1Name, admin1 string, lat, lon float64) string {
	return strings.Join([]string{
		country, code, place, admin1Name, admin1, "", "", "", "", fmt.Sprintf("%.4f", lat), fmt.Sprintf("%.4f", lon), "6",
	}, "\t")
}

// generatedPlaces is a places dump of n populated places scattered over
// Great Britain, with a few lines of other kinds mixed in.
func generatedPlaces(n int) (string, int) {
	r := rand.New(rand.NewPCG(7, 11))
	var b strings.Builder
	skipped := 0
	for i := 0; i < n; i++ {
		lat, lon := 50+r.Float64()*8, -5.5+r.Float64()*7
		fmt.Fprintln(&b, placeLine(9000000+i, fmt.Sprintf("Genby %05d", i), lat, lon, "P", "PPL", "GB", "ENG", r.IntN(5000)))
		if i%500 == 0 {
			// A hill is no place to live: skipped, not an error.
			fmt.Fprintln(&b, placeLine(8000000+i, fmt.Sprintf("Genfell %d", i), lat, lon, "T", "HLL", "GB", "ENG", 0))
			skipped++
		}
	}
	return b.String(), skipped
}

// importer builds a service over a migrated and seeded database.
func importer(t *testing.T, db *bun.DB) (*locations.Feature, *testkit.Server) {
	t.Helper()
	s := newServer(t, db)
	svc, err := locations.New(locations.Deps{Config: s.Config, DB: db, Log: logrus.NewEntry(logrus.StandardLogger())})
	if err != nil {
		t.Fatal(err)
	}
	return svc, s
}

func TestImportPlaces(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		svc, s := importer(t, db)
		body, skipped := generatedPlaces(2500)
		body += "not\tenough\tcolumns\n"
		body += placeLine(9999999, "Broken", 95, 0, "P", "PPL", "GB", "ENG", 1) + "\n"
		body += placeLine(9999998, "Windows Line", 54.1, -2.2, "P", "PPL", "GB", "SCT", 10) + "\r\n"
		body += placeLine(9999997, strings.Repeat("x", 2<<20), 54.1, -2.2, "P", "PPL", "GB", "ENG", 10) + "\n"
		body += placeLine(9999996, "Ballygen", 53.5, -7.5, "P", "PPLA", "IE", "L", 6000)

		im := svc.NewImporter()
		var progress bytes.Buffer
		im.Progress, im.ProgressEvery = &progress, 1000
		st, err := im.Import(context.Background(), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if st.Format != gazetteer.FormatPlaces || st.Imported != 2502 || st.Skipped != skipped || st.Invalid != 3 || len(st.FirstErrors) != 3 {
			t.Fatalf("stats %+v", st)
		}
		if st.Places != 2502+715 || st.RowsPerSecond() <= 0 {
			t.Fatalf("totals %+v (715 seeded places)", st)
		}
		if n := strings.Count(progress.String(), "rows/s"); n != 2 {
			t.Fatalf("progress %q, want a line per 1000 lines", progress.String())
		}
		for _, e := range st.FirstErrors {
			if !strings.Contains(e, "line ") {
				t.Fatalf("error %q does not name its line", e)
			}
		}
		// Imported places are found, with the region of their GeoNames admin code.
		res := results(t, s.Do(get(search, "query", "genby 0000")))
		if len(res) != 10 {
			t.Fatalf("results %+v, want Genby 00000 to 00009", res)
		}
		for _, r := range res {
			if !strings.HasPrefix(r.Text, "Genby 0000") || r.Description != "England, United Kingdom" || r.Type != place.TypeAddress {
				t.Fatalf("result %+v", r)
			}
		}
		for q, want := range map[string]string{"Windows Line": "Scotland, United Kingdom", "Ballygen": "Leinster, Ireland"} {
			res := results(t, s.Do(get(search, "query", q)))
			if len(res) != 1 || res[0].Description != want {
				t.Fatalf("%s: %+v, want %s", q, res, want)
			}
		}
		// Importing again changes nothing.
		again, err := svc.NewImporter().Import(context.Background(), strings.NewReader(body))
		if err != nil || again.Places != st.Places || again.Imported != st.Imported {
			t.Fatalf("second import %+v, %v; want the same totals as %+v", again, err, st)
		}
	})
}

func TestImportPostcodes(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		svc, s := importer(t, db)
		var b strings.Builder
		// Full postcodes of a district the seed does not have: CA10 (Penrith).
		for i, inward := range []string{"1AA", "1AB", "2BB", "2BD", "9ZZ"} {
			fmt.Fprintln(&b, postcodeLine("GB", "CA10 "+inward, "Penrith", "England", "ENG", 54.60+float64(i)*0.01, -2.70))
		}
		fmt.Fprintln(&b, postcodeLine("GB", "LA9 4DL", "Kendal", "England", "ENG", 54.3284, -2.7454))
		fmt.Fprintln(&b, postcodeLine("GB", "not a postcode", "Kendal", "England", "ENG", 54.3, -2.7))
		fmt.Fprintln(&b, postcodeLine("GB", "LA9 4DX", "Kendal", "England", "ENG", 0, 190))
		fmt.Fprintln(&b, postcodeLine("FR", "75001", "Paris", "Île-de-France", "11", 48.8625, 2.3364))
		st, err := svc.NewImporter().Import(context.Background(), strings.NewReader(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		if st.Format != gazetteer.FormatPostcodes || st.Imported != 7 || st.Invalid != 2 {
			t.Fatalf("stats %+v", st)
		}
		// CA10 exists as a container of its five postcodes...
		res := results(t, s.Do(get(search, "query", "ca10")))
		if len(res) != 6 || res[0].Text != "CA10" || res[0].Type != place.TypePostcode || res[0].Description != "Penrith, England - 5 addresses" {
			t.Fatalf("results %+v", res)
		}
		// ...inside the locality Penrith, next to the seeded CA11.
		penrith := results(t, s.Do(get(search, "query", "Penrith")))[0]
		if penrith.Type != place.TypeLocality || !strings.HasSuffix(penrith.Description, "2 postcodes") {
			t.Fatalf("Penrith %+v", penrith)
		}
		// LA9 now holds its first full postcode.
		if la9 := results(t, s.Do(get(search, "query", "LA9"))); la9[0].Type != place.TypePostcode || !strings.HasSuffix(la9[0].Description, "1 address") {
			t.Fatalf("LA9 %+v", la9)
		}
		// A code without hierarchy is an address of its own, region from the dump.
		paris := results(t, s.Do(get(search, "query", "75001", "countryISO", "FR")))
		if len(paris) != 1 || paris[0].Type != place.TypeAddress || paris[0].Description != "Paris, Île-de-France, France" {
			t.Fatalf("75001 %+v", paris)
		}
		loc := location(t, s.Do(get(byID, "id", paris[0].ID)))
		if loc.Address.City != "Paris" || loc.Address.Postcode != "75001" || loc.Address.CountryISO != "FR" {
			t.Fatalf("location %+v", loc)
		}
	})
}

func TestImportRejectsUnknownFormats(t *testing.T) {
	svc, _ := importer(t, testkit.DB(t, testkit.SQLite))
	for name, body := range map[string]string{
		"csv":   "name,lat,lon\nKendal,54.3,-2.7\n",
		"empty": "\n\n",
		"tabs":  "a\tb\tc\n",
	} {
		if _, err := svc.NewImporter().Import(context.Background(), strings.NewReader(body)); err == nil {
			t.Errorf("%s: imported, want an error", name)
		}
	}
}

// failingReader fails after some bytes, like a broken disk or pipe.
type failingReader struct {
	r io.Reader
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, fmt.Errorf("disk on fire")
	}
	return n, err
}

func TestImportReadError(t *testing.T) {
	svc, _ := importer(t, testkit.DB(t, testkit.SQLite))
	body, _ := generatedPlaces(10)
	if _, err := svc.NewImporter().Import(context.Background(), &failingReader{r: strings.NewReader(body)}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err %v, want the read error", err)
	}
}

func FuzzParsePlaceLine(f *testing.F) {
	f.Add(placeLine(2643743, "London", 51.50853, -0.12574, "P", "PPLC", "GB", "ENG", 8961989))
	f.Add(placeLine(2964574, "Dublin", 53.33306, -6.24889, "P", "PPLC", "IE", "L", 1024027))
	f.Add(placeLine(1, "Hill", 10, 10, "T", "HLL", "XX", "", 0))
	f.Add("1\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t")
	f.Fuzz(func(t *testing.T, line string) {
		row, keep, err := gazetteer.ParsePlaceLine(strings.Split(line, "\t"))
		if err != nil || !keep {
			return
		}
		if row.ID == "" || row.Name == "" || place.Normalize(row.Name) == "" {
			t.Fatalf("kept a place without id or name from %q", line)
		}
		if row.Lat < -90 || row.Lat > 90 || row.Lon < -180 || row.Lon > 180 {
			t.Fatalf("kept a place off the globe from %q", line)
		}
		if _, ok := place.CountryCode(row.CountryISO); !ok || row.Population < 0 {
			t.Fatalf("kept bad country or population from %q", line)
		}
	})
}

func FuzzParsePostcodeLine(f *testing.F) {
	f.Add(postcodeLine("GB", "LA9 4DL", "Kendal", "England", "ENG", 54.3284, -2.7454))
	f.Add(postcodeLine("IE", "D02", "Dublin", "Leinster", "L", 53.34, -6.25))
	f.Add(postcodeLine("DE", "10115", "Berlin", "Berlin", "16", 52.5323, 13.3846))
	f.Add("GB\t\t\t\t\t\t\t\t\t\t\t")
	f.Fuzz(func(t *testing.T, line string) {
		row, err := gazetteer.ParsePostcodeLine(strings.Split(line, "\t"))
		if err != nil {
			return
		}
		if row.Lat < -90 || row.Lat > 90 || row.Lon < -180 || row.Lon > 180 || row.CodeNorm == "" {
			t.Fatalf("kept a bad postcode from %q", line)
		}
		if row.IsDistrict && row.Parent != "" {
			t.Fatalf("a district with a parent from %q", line)
		}
	})
}
