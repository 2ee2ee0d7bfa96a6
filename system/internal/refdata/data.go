package refdata

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// dataFiles is the reference data committed with the module (see data/README.md).
//
//go:embed data/*.json data/*.csv
var dataFiles embed.FS

// Dataset is the validated content of the data files, ready to seed.
type Dataset struct {
	Catalogue
	Specifications []SpecUnit
	// Measures holds each grade's default specification by grade id.
	Measures map[int][]Measure
	// Version identifies the content: the seed runs again only when it changes.
	Version string
}

// LoadDataset reads and validates the embedded data files.
func LoadDataset() (*Dataset, error) {
	sub, err := fs.Sub(dataFiles, "data")
	if err != nil {
		return nil, err
	}
	return ParseDataset(sub)
}

// The shapes of the data files.
type (
	fileWeight = WeightUnit
	fileGrade  struct {
		ID        int      `json:"id"`
		Name      string   `json:"name"`
		Spec      string   `json:"spec"`
		Varieties []string `json:"varieties"`
	}
	fileType struct {
		ID     int         `json:"id"`
		Name   string      `json:"name"`
		Grades []fileGrade `json:"grades"`
	}
	fileItem struct {
		ID     int         `json:"id"`
		Name   string      `json:"name"`
		Tags   []int       `json:"tags"`
		Weight *fileWeight `json:"weight"`
		Types  []fileType  `json:"types"`
	}
	fileGroup struct {
		ID                string     `json:"id"`
		CountryISO        string     `json:"countryISO"`
		Type              string     `json:"type"`
		DefaultWeight     fileWeight `json:"defaultWeight"`
		WeighbridgeWeight fileWeight `json:"weighbridgeWeight"`
		Items             []fileItem `json:"items"`
	}
	fileCommodities struct {
		Tags   []IDName    `json:"tags"`
		Groups []fileGroup `json:"groups"`
	}
	fileSpec struct {
		SpecUnit
		ScaleMin float64 `json:"scaleMin"`
		ScaleMax float64 `json:"scaleMax"`
	}
	fileMeasure struct {
		Spec int      `json:"spec"`
		Min  *float64 `json:"min"`
		Max  *float64 `json:"max"`
	}
	fileSpecs struct {
		Specifications []fileSpec               `json:"specifications"`
		Sets           map[string][]fileMeasure `json:"sets"`
	}
)

var (
	isoAlpha2 = regexp.MustCompile(`^[A-Z]{2}$`)
	isoAlpha3 = regexp.MustCompile(`^[A-Z]{3}$`)
	isoSub    = regexp.MustCompile(`^[A-Z]{2}-[A-Z0-9]{1,3}$`)
)

// ParseDataset reads the data files of fsys and checks them whole: unique ids,
// references that resolve, codes of the right form. A mistake in the data fails
// the start-up (and the tests) instead of serving a broken document.
func ParseDataset(fsys fs.FS) (*Dataset, error) {
	d := &Dataset{Measures: map[int][]Measure{}}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	version := sha256.New()
	read := func(name string, v any) {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			fail("%s: %v", name, err)
			return
		}
		version.Write([]byte(name))
		version.Write(b)
		if v == nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			fail("%s: %v", name, err)
		}
	}

	read("countries.json", &d.Countries)
	countries := map[string]bool{}
	for _, c := range d.Countries {
		if !isoAlpha2.MatchString(c.ISO) || !isoAlpha3.MatchString(c.ISO3) || countries[c.ISO] {
			fail("countries.json: bad or duplicate code %q/%q", c.ISO, c.ISO3)
		}
		if c.Name == "" || c.Currency == "" || !strings.HasPrefix(c.CallingCode, "+") || c.Locale == "" || c.Continent == "" || c.ZoneDescriptor == "" {
			fail("countries.json: %s lacks a name, currency, calling code, locale, continent or zone descriptor", c.ISO)
		}
		if c.DefaultWeight.Name == "" || c.DefaultWeight.Conversion <= 0 {
			fail("countries.json: %s has no default weight", c.ISO)
		}
		countries[c.ISO] = true
	}

	regionsCSV, err := fs.ReadFile(fsys, "regions.csv")
	if err != nil {
		fail("regions.csv: %v", err)
	} else {
		version.Write([]byte("regions.csv"))
		version.Write(regionsCSV)
		d.Regions, err = parseRegions(regionsCSV, countries)
		if err != nil {
			errs = append(errs, err)
		}
	}

	var specs fileSpecs
	read("specifications.json", &specs)
	scale := map[int]fileSpec{}
	for _, s := range specs.Specifications {
		if s.ID <= 0 || scale[s.ID].ID != 0 || s.Name == "" || s.Unit == "" || s.ScaleMin >= s.ScaleMax {
			fail("specifications.json: bad specification %+v", s)
		}
		scale[s.ID] = s
		d.Specifications = append(d.Specifications, s.SpecUnit)
	}
	sets := map[string][]Measure{}
	for name, ms := range specs.Sets {
		seen := map[int]bool{}
		for _, m := range ms {
			s, ok := scale[m.Spec]
			if !ok || seen[m.Spec] || (m.Min == nil && m.Max == nil) {
				fail("specifications.json: set %s: bad measure of specification %d", name, m.Spec)
				continue
			}
			seen[m.Spec] = true
			lo, hi := s.ScaleMin, s.ScaleMax
			if m.Min != nil {
				lo = *m.Min
			}
			if m.Max != nil {
				hi = *m.Max
			}
			if lo > hi || lo < s.ScaleMin || hi > s.ScaleMax {
				fail("specifications.json: set %s: range %v..%v of %s is outside its scale", name, lo, hi, s.Name)
			}
			sets[name] = append(sets[name], Measure{Specification: s.SpecUnit, Min: lo, Max: hi})
		}
	}

	var com fileCommodities
	read("commodities.json", &com)
	tags := map[int]IDName{}
	for _, t := range com.Tags {
		tags[t.ID] = t
	}
	items, types, grades := map[int]*CommodityItem{}, map[int]bool{}, map[int]int{} // grade id → item id
	groupIDs := map[string]bool{}
	for _, g := range com.Groups {
		if g.ID == "" || groupIDs[g.ID] || !countries[g.CountryISO] || g.Type == "" || g.DefaultWeight.Conversion <= 0 || g.WeighbridgeWeight.Conversion <= 0 {
			fail("commodities.json: bad group %q", g.ID)
		}
		groupIDs[g.ID] = true
		c := Commodity{ID: g.ID, CountryISO: g.CountryISO, Type: g.Type, DefaultWeight: g.DefaultWeight, WeighbridgeWeight: g.WeighbridgeWeight, Items: []CommodityItem{}}
		for _, it := range g.Items {
			if it.ID <= 0 || items[it.ID] != nil || it.Name == "" || len(it.Types) == 0 {
				fail("commodities.json: bad or duplicate item %d %q", it.ID, it.Name)
			}
			item := CommodityItem{ID: it.ID, Name: it.Name, Tags: []IDName{}, Weight: g.DefaultWeight, Types: []CommodityType{}}
			if it.Weight != nil {
				item.Weight = *it.Weight
			}
			for _, tid := range it.Tags {
				t, ok := tags[tid]
				if !ok {
					fail("commodities.json: item %d has unknown tag %d", it.ID, tid)
				}
				item.Tags = append(item.Tags, t)
			}
			typeNames := map[string]bool{}
			for _, ty := range it.Types {
				if ty.ID <= 0 || types[ty.ID] || ty.Name == "" || typeNames[strings.ToLower(ty.Name)] || len(ty.Grades) == 0 {
					fail("commodities.json: item %d: bad or duplicate type %d %q", it.ID, ty.ID, ty.Name)
				}
				types[ty.ID], typeNames[strings.ToLower(ty.Name)] = true, true
				ct := CommodityType{ID: ty.ID, Name: ty.Name, Grades: []Grade{}}
				gradeNames := map[string]bool{}
				for _, gr := range ty.Grades {
					if _, dup := grades[gr.ID]; gr.ID <= 0 || dup || gr.Name == "" || gradeNames[strings.ToLower(gr.Name)] {
						fail("commodities.json: type %d: bad or duplicate grade %d %q", ty.ID, gr.ID, gr.Name)
					}
					grades[gr.ID], gradeNames[strings.ToLower(gr.Name)] = it.ID, true
					ms, ok := sets[gr.Spec]
					if !ok {
						fail("commodities.json: grade %d names unknown specification set %q", gr.ID, gr.Spec)
					}
					d.Measures[gr.ID] = ms
					vs, err := normaliseVarieties(gr.Varieties)
					if err != nil {
						fail("commodities.json: grade %d: %v", gr.ID, err)
					}
					ct.Grades = append(ct.Grades, Grade{ID: gr.ID, Name: gr.Name, Varieties: vs})
				}
				item.Types = append(item.Types, ct)
			}
			items[it.ID] = &item
			c.Items = append(c.Items, item)
		}
		d.Commodities = append(d.Commodities, c)
	}

	read("trading.json", &d.Trading)
	checkReasons := func(kind string, rs []Reason) {
		seen := map[int]bool{}
		for _, r := range rs {
			if r.ID <= 0 || seen[r.ID] || r.Description == "" {
				fail("trading.json: %s: bad or duplicate reason %d", kind, r.ID)
			}
			seen[r.ID] = true
		}
	}
	checkReasons("settlementDeductionReasons", d.Trading.SettlementDeductionReasons)
	checkReasons("settlementBonusReasons", d.Trading.SettlementBonusReasons)
	checkReasons("closeListingReasons", d.Trading.CloseListingReasons)
	exIDs := map[int]bool{}
	for _, e := range d.Trading.ExFarmPriceCommodities {
		if e.ID <= 0 || exIDs[e.ID] || e.Name == "" || items[e.CommodityID] == nil {
			fail("trading.json: bad ex-farm price commodity %d", e.ID)
		}
		exIDs[e.ID] = true
		for _, g := range e.Grades {
			if grades[g] != e.CommodityID {
				fail("trading.json: ex-farm price commodity %d: grade %d is not a grade of commodity %d", e.ID, g, e.CommodityID)
			}
		}
	}
	if st := d.Trading.SeamlessTrading; st.OpenPeriodMinutes <= 0 || st.ReviewPeriodMinutes <= 0 || st.BidExpiryMinutes <= 0 {
		fail("trading.json: seamlessTrading periods must be positive")
	}

	read("conversions.json", &d.Conversions)
	for k, v := range d.Conversions {
		if k == "" || v <= 0 {
			fail("conversions.json: bad conversion %q", k)
		}
	}
	read("seller_commodities.json", &d.SellerCommodities)
	sellers := map[string]bool{}
	for _, s := range d.SellerCommodities {
		if s.ID == "" || s.Name == "" || sellers[s.ID] {
			fail("seller_commodities.json: bad or duplicate %q", s.ID)
		}
		sellers[s.ID] = true
	}

	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	d.Version = hex.EncodeToString(version.Sum(nil))
	return d, nil
}

func parseRegions(raw []byte, countries map[string]bool) ([]Region, error) {
	recs, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("regions.csv: %w", err)
	}
	want := []string{"country", "iso", "name", "group", "ukGroup", "tb", "aliases"}
	if len(recs) == 0 || strings.Join(recs[0], ",") != strings.Join(want, ",") {
		return nil, fmt.Errorf("regions.csv: the header must be %s", strings.Join(want, ","))
	}
	var (
		out  []Region
		errs []error
		seen = map[string]bool{}
	)
	for i, r := range recs[1:] {
		line := i + 2
		tb, err := strconv.Atoi(r[5])
		if err != nil || tb < 0 {
			errs = append(errs, fmt.Errorf("regions.csv line %d: tb must be a whole number of months", line))
		}
		reg := Region{Country: r[0], ISO: r[1], Name: r[2], Group: r[3], UKGroup: r[4], TB: tb, Aliases: []string{}}
		if !countries[reg.Country] || !isoSub.MatchString(reg.ISO) || !strings.HasPrefix(reg.ISO, reg.Country+"-") || seen[reg.ISO] {
			errs = append(errs, fmt.Errorf("regions.csv line %d: bad or duplicate code %q of %q", line, reg.ISO, reg.Country))
		}
		if reg.Name == "" || reg.Group == "" || (reg.Country == "GB") != (reg.UKGroup != "") {
			errs = append(errs, fmt.Errorf("regions.csv line %d: name and group are required, ukGroup for GB only", line))
		}
		seen[reg.ISO] = true
		if r[6] != "" {
			reg.Aliases = strings.Split(r[6], "|")
		}
		out = append(out, reg)
	}
	return out, errors.Join(errs...)
}

// normaliseVarieties trims names, drops blanks and case-insensitive repeats,
// keeping the first spelling and the order.
func normaliseVarieties(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	seen := map[string]bool{}
	for _, v := range in {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if len([]rune(v)) > MaxVarietyLen {
			return nil, fmt.Errorf("variety %q is longer than %d characters", v, MaxVarietyLen)
		}
		k := strings.ToLower(v)
		if !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	return out, nil
}

// regionGroups lists the groups of regions in first-seen order with their codes.
func regionGroups(regions []Region) []RegionGroup {
	var order []string
	codes := map[string][]string{}
	for _, r := range regions {
		if _, ok := codes[r.Group]; !ok {
			order = append(order, r.Group)
		}
		codes[r.Group] = append(codes[r.Group], r.ISO)
	}
	out := make([]RegionGroup, 0, len(order))
	for _, g := range order {
		out = append(out, RegionGroup{Group: g, Regions: strings.Join(codes[g], ",")})
	}
	return out
}

// sortedKeys returns a map's keys in order (for deterministic seeding).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
