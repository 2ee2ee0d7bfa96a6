package gazetteer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/system/internal/locations/place"
	"github.com/uptrace/bun"
)

// seedFiles are the gazetteer's seed: UK and Irish places, postcode districts,
// Eircode routing keys and a few full postcodes, written for this project.
//
//go:embed seed/*.txt
var seedFiles embed.FS

// seedHashKey is the gazetteer_meta key of the hash of the seeded files.
const seedHashKey = "seed_hash"

// seedBatch is how many rows one seed INSERT carries.
const seedBatch = 500

// seedSet is the parsed seed.
type seedSet struct {
	places    []placeRow
	postcodes []postcodeRow
	hash      string
}

// Seed loads the seed into the gazetteer when it is not there yet (or has
// changed since it was loaded): idempotent and, once done, one query at start-up.
func Seed(ctx context.Context, store *Store) error {
	set, err := loadSeed()
	if err != nil {
		return err
	}
	have, err := store.Meta(ctx, store.DB(), seedHashKey)
	if err != nil {
		return fmt.Errorf("read gazetteer seed state: %w", err)
	}
	if have == set.hash {
		return nil
	}
	return db.InTx(ctx, store.DB(), func(ctx context.Context, tx bun.Tx) error {
		for i := 0; i < len(set.places); i += seedBatch {
			if err := store.UpsertPlaces(ctx, tx, set.places[i:min(i+seedBatch, len(set.places))]); err != nil {
				return err
			}
		}
		for i := 0; i < len(set.postcodes); i += seedBatch {
			if err := store.UpsertPostcodes(ctx, tx, set.postcodes[i:min(i+seedBatch, len(set.postcodes))]); err != nil {
				return err
			}
		}
		if err := store.RefreshCounts(ctx, tx); err != nil {
			return err
		}
		return store.SetMeta(ctx, tx, seedHashKey, set.hash)
	})
}

// loadSeed parses the embedded seed files, checking that every region is
// known, every postcode's post town is a seeded place and no id repeats.
func loadSeed() (seedSet, error) {
	var set seedSet
	h := sha256.New()
	read := func(name string) ([][]string, error) {
		b, err := seedFiles.ReadFile("seed/" + name)
		if err != nil {
			return nil, err
		}
		h.Write(b)
		var rows [][]string
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			rows = append(rows, strings.Split(line, "|"))
		}
		return rows, sc.Err()
	}
	regionRows, err := read("regions.txt")
	if err != nil {
		return set, err
	}
	regions := map[string]string{}
	for _, r := range regionRows {
		if len(r) != 2 {
			return set, fmt.Errorf("seed regions: bad line %q", strings.Join(r, "|"))
		}
		regions[r[0]] = r[1]
	}
	placeRows, err := read("places.txt")
	if err != nil {
		return set, err
	}
	ids := map[string]bool{}
	byName := map[string][]int{}
	for _, r := range placeRows {
		if len(r) != 7 {
			return set, fmt.Errorf("seed places: bad line %q", strings.Join(r, "|"))
		}
		lat, err1 := strconv.ParseFloat(r[1], 64)
		lon, err2 := strconv.ParseFloat(r[2], 64)
		pop, err3 := strconv.ParseInt(r[4], 10, 64)
		regionName, known := regions[r[3]]
		if err1 != nil || err2 != nil || err3 != nil || !known {
			return set, fmt.Errorf("seed places: bad values in %q", strings.Join(r, "|"))
		}
		country := r[3][:2]
		p := newPlaceRow("seed:"+strings.ToLower(r[3])+":"+slug(r[0]), r[0], r[5], country, r[3], regionName, lat, lon, pop)
		if r[6] != "" {
			w, err := place.ParseThreeWords(r[6])
			if err != nil {
				return set, fmt.Errorf("seed places: three-word address of %s: %w", r[0], err)
			}
			p.ThreeWords = ptr(string(w))
		}
		if ids[p.ID] {
			return set, fmt.Errorf("seed places: duplicate id %s", p.ID)
		}
		ids[p.ID] = true
		byName[p.NameNorm] = append(byName[p.NameNorm], len(set.places))
		set.places = append(set.places, p)
	}
	postcodeRows, err := read("postcodes.txt")
	if err != nil {
		return set, err
	}
	for _, r := range postcodeRows {
		if len(r) != 5 {
			return set, fmt.Errorf("seed postcodes: bad line %q", strings.Join(r, "|"))
		}
		lat, err1 := strconv.ParseFloat(r[2], 64)
		lon, err2 := strconv.ParseFloat(r[3], 64)
		if err1 != nil || err2 != nil {
			return set, fmt.Errorf("seed postcodes: bad values in %q", strings.Join(r, "|"))
		}
		// The post town is the nearest seeded place of that name: there are
		// several Newports and Richmonds.
		at := place.Coordinates{Lat: lat, Lon: lon}
		town, best := -1, 0.0
		for _, i := range byName[place.Normalize(r[1])] {
			if d := place.DistanceKm(at, place.Coordinates{Lat: set.places[i].Lat, Lon: set.places[i].Lon}); town < 0 || d < best {
				town, best = i, d
			}
		}
		if town < 0 {
			return set, fmt.Errorf("seed postcodes: post town %q of %s is not a seeded place", r[1], r[0])
		}
		p := set.places[town]
		pc, ok := place.ParsePostcode(p.CountryISO, r[0])
		if !ok {
			return set, fmt.Errorf("seed postcodes: %q is no %s postcode", r[0], p.CountryISO)
		}
		row := newPostcodeRow(pc, p.Name, p.CountryISO, p.RegionISO, p.RegionName, lat, lon)
		if r[4] != "" {
			w, err := place.ParseThreeWords(r[4])
			if err != nil {
				return set, fmt.Errorf("seed postcodes: three-word address of %s: %w", r[0], err)
			}
			row.ThreeWords = ptr(string(w))
		}
		if ids[row.ID] {
			return set, fmt.Errorf("seed postcodes: duplicate id %s", row.ID)
		}
		ids[row.ID] = true
		set.postcodes = append(set.postcodes, row)
	}
	set.hash = hex.EncodeToString(h.Sum(nil))
	return set, nil
}

// newPlaceRow fills a place with its derived search columns.
func newPlaceRow(id, name, kind, country, regionISO, regionName string, lat, lon float64, population int64) placeRow {
	n := place.Normalize(name)
	return placeRow{
		ID: id, Name: name, NameNorm: n, Kind: kind,
		CountryISO: country, CountryName: place.CountryName(country), RegionISO: regionISO, RegionName: regionName,
		Lat: lat, Lon: lon, Population: population,
	}
}

// newPostcodeRow fills a postcode with its derived columns; its id is the
// country and the normalised code ("GB:SW1A1AA").
func newPostcodeRow(pc place.Postcode, placeName, country, regionISO, regionName string, lat, lon float64) postcodeRow {
	return postcodeRow{
		ID: country + ":" + pc.Norm, Code: pc.Display, CodeNorm: pc.Norm, Parent: pc.District, IsDistrict: pc.IsDistrict,
		PlaceName: placeName, PlaceNorm: place.Normalize(placeName),
		CountryISO: country, CountryName: place.CountryName(country), RegionISO: regionISO, RegionName: regionName,
		Lat: lat, Lon: lon,
	}
}

// slug is a name as an id part: "King's Lynn" → "king-s-lynn".
func slug(name string) string { return strings.ReplaceAll(place.Normalize(name), " ", "-") }

func ptr[T any](v T) *T { return &v }
