package listings

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agritrade/api/livestock/internal/categories"
	"github.com/agritrade/api/platform/filestore"
)

// rowFixtures are listings of every kind with every field set, their strings
// holding what JSON escapes (quotes, backslashes, controls, <>&, U+2028,
// characters outside the BMP).
func rowFixtures() []*Listing {
	at := time.Date(2026, 3, 14, 9, 26, 53, 589_000_000, time.UTC)
	closed := at.Add(48 * time.Hour)
	dist := 12.345678901234
	qty, minAge, maxAge := 40, 1.5, 3.25
	tricky := "Hill \"Mule\" ewes \\ <b>&</b>\u2028\ttab Ærø ñ 🐑 \x01"
	loc := &Location{ThreeWordAddress: "filled.count.soap", Coordinates: Coordinates{Lat: 54.597285, Lon: -2.990421},
		Address: Address{Name: "Low Fold", Line1: "1 Fell Lane", Line2: tricky, Line3: "x", City: "Keswick", Region: "Cumbria",
			RegionISO: "GB-CMA", Postcode: "CA12 4AB", CountryName: "United Kingdom", CountryISO: "GB"}}
	base := func(kind categories.Kind, props Properties) *Listing {
		return &Listing{
			ID: "lst-" + string(kind), UserID: "u1", OrganisationID: "o1", OrganisationName: "Fell & Dale",
			Kind: kind, Type: Selling, Status: StatusSold, CategoryIDs: []int{1, 126},
			Location: loc, Description: tricky, Tags: []string{"organic", tricky},
			Price: Price{Type: "range", PricePerUnit: Money{Amount: 137.41, Currency: "GBP"},
				MinPrice: &Money{Amount: 0.1, Currency: "GBP"}, MaxPrice: &Money{Amount: 1e21, Currency: "EUR"}},
			Files: []filestore.Ref{{Name: "ewes.jpg", ID: "f1", URL: "https://example.test/f1?a=1&b=2", UserID: "u1",
				UserName: tricky, OrganisationID: "o1", CreatedAtUTC: "2026-03-14T09:26:53.589Z"}},
			Properties: props, CreatedAt: at, UpdatedAt: at.Add(time.Hour), ClosedAt: &closed,
			Hidden: true, DistanceKm: &dist, IsWishlisted: true,
		}
	}
	return []*Listing{
		base(categories.Sheep, &SheepProperties{BreedType: "swaledale", BreedSociety: tricky, Type: []string{"breeding", "store"},
			AdditionalInfo: []string{"scanned"}, Sexes: "ewes", Health: &SheepHealth{Data: tricky}}),
		base(categories.Cattle, &CattleProperties{Type: "beef", BreedType: "galloway", AdditionalInfo: []string{}, Sexes: "bulls",
			Quantity: &qty, SocietyNumber: "GB 123", MinAge: &minAge, MaxAge: &maxAge,
			Health:      &CattleHealth{TBStatus: "clear", TBDetails: tricky, TBInterval: "4", Data: "d"},
			Performance: &CattlePerformance{AverageWeight: &Weight{Name: "kg", Conversion: 1, Weight: 512.5}}}),
		base(categories.WorkingDog, &DogProperties{BreedType: "border-collie", Sex: "dog",
			Registration: &DogRegistration{DateOfBirth: "2024-05-01", IsRegistered: true, RegistrationNumber: "ISDS 1", Name: tricky}}),
		base(categories.Feed, nil),
		base(categories.Bedding, nil),
	}
}

// checkRowDecoding stores l as its row (toRow) and reads it back: the row's
// decoder (goccy/go-json) must give what encoding/json gives, and the listing
// must render as l does.
func checkRowDecoding(t *testing.T, l *Listing) {
	t.Helper()
	r, _, err := toRow(l)
	if err != nil {
		t.Fatalf("toRow: %v", err)
	}
	// The search fills these from SQL, not from the JSON columns.
	r.DistanceKm, r.IsWishlisted = l.DistanceKm, l.IsWishlisted
	got, err := r.listing()
	if err != nil {
		t.Fatalf("listing: %v", err)
	}
	want, err := r.decode(json.Unmarshal)
	if err != nil {
		t.Fatalf("decode with encoding/json: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the row's decoder and encoding/json differ:\n got %#v\nwant %#v", got, want)
	}
	gotJSON, err := got.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, err := l.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Fatalf("read back, the listing renders\n %s\nwritten, it rendered\n %s", gotJSON, wantJSON)
	}
}

func TestRowListing_DecodersAgree(t *testing.T) {
	for _, l := range rowFixtures() {
		t.Run(string(l.Kind), func(t *testing.T) { checkRowDecoding(t, l) })
	}
}

// FuzzRowListing: whatever text and numbers a listing holds, its row reads
// back the same with either decoder and renders as it was written.
func FuzzRowListing(f *testing.F) {
	f.Add("Hill \"Mule\" ewes", "CA12 4AB", "swaledale", "organic", 137.41, 54.597285, -2.990421)
	f.Add("\\u0000 <>& \u2028 🐑", "", "", "\xff\xfe", 1e-7, -89.999999, 179.999999)
	f.Add("", "\x00", "\"", "\\", 9007199254740993.0, 0.1, math.Copysign(0, -1)) // a negative zero
	f.Fuzz(func(t *testing.T, text, postcode, breed, tag string, amount, lat, lon float64) {
		for _, v := range []float64{amount, lat, lon} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return // JSON has no such numbers; validation refuses them
			}
		}
		for _, v := range []string{text, postcode, breed, tag} {
			if !utf8.ValidString(v) {
				return // a listing's text comes from a JSON body, which encoding/json decodes into valid UTF-8
			}
		}
		for _, l := range rowFixtures() {
			l.Description, l.Tags = text, []string{tag}
			l.Location.Address.Postcode, l.Location.Coordinates = postcode, Coordinates{Lat: lat, Lon: lon}
			l.Price.PricePerUnit.Amount = amount
			switch p := l.Properties.(type) {
			case *SheepProperties:
				p.BreedType = breed
			case *CattleProperties:
				p.BreedType = breed
			case *DogProperties:
				p.BreedType = breed
			}
			checkRowDecoding(t, l)
		}
	})
}

// BenchmarkRowListing: reading back one search result's row (the five JSON
// columns of a sheep listing as the benchmark data holds them).
func BenchmarkRowListing(b *testing.B) {
	for _, c := range []struct {
		name      string
		unmarshal func([]byte, any) error
	}{{"goccy", nil}, {"encoding-json", json.Unmarshal}} {
		b.Run(c.name, func(b *testing.B) {
			loc := `{"threeWordAddress":"","address":{"name":"","line1":"","line2":"","line3":"","city":"","region":"",` +
				`"regionISO":"","postcode":"","countryName":"","countryISO":""},"coordinates":{"lat":53.437108,"lon":0.016507}}`
			props := `{"breedType":"swaledale","type":[],"additionalInfo":[],"sexes":"rams"}`
			r := listingRow{ID: "k3v9q2m7x1b8n4c", Kind: "sheep", Type: Selling, Status: StatusActive, CategoryIDs: "[1,126]",
				Location: &loc, Price: `{"type":"fixed","pricePerUnit":{"amount":137.41,"currency":"GBP"},"minPrice":null,"maxPrice":null}`,
				Files: "[]", Tags: "[]", Properties: &props, CreatedAt: time.Now(), UpdatedAt: time.Now()}
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if c.unmarshal == nil {
					_, err = r.listing()
				} else {
					_, err = r.decode(c.unmarshal)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
