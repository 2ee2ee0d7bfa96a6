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
// the start-up (and the tests) instead of serving a broken document. Every file
// is read and checked even after an earlier one failed, so one run reports every
// mistake.
func ParseDataset(fsys fs.FS) (*Dataset, error) {
	p := &datasetParser{d: &Dataset{Measures: map[int][]Measure{}}}
	version := sha256.New()
	for _, f := range datasetFiles {
		raw, err := fs.ReadFile(fsys, f.name)
		if err != nil {
			p.fail("%s: %v", f.name, err)
		} else {
			version.Write([]byte(f.name))
			version.Write(raw)
		}
		if f.parse != nil {
			if err == nil {
				f.parse(p, raw)
			}
			continue
		}
		if err == nil {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(f.into(p)); err != nil {
				p.fail("%s: %v", f.name, err)
			}
		}
		// The check runs on whatever was decoded: a field of the wrong type
		// does not hide the mistakes of the others.
		f.check(p)
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	p.d.Version = hex.EncodeToString(version.Sum(nil))
	return p.d, nil
}

// datasetFile is one data file and its check. A JSON file decodes into the
// value into returns, then check validates it against the files before it; a
// file of another format has parse, which reads the raw bytes itself.
type datasetFile struct {
	name  string
	into  func(*datasetParser) any
	check func(*datasetParser)
	parse func(*datasetParser, []byte)
}

// datasetFiles lists the data files in the order they are checked: a file
// refers only to files above it. The order is also that of the version hash,
// so changing it reseeds every database once.
var datasetFiles = []datasetFile{
	{name: "countries.json", into: func(p *datasetParser) any { return &p.d.Countries }, check: (*datasetParser).checkCountries},
	{name: "regions.csv", parse: (*datasetParser).parseRegions},
	{name: "specifications.json", into: func(p *datasetParser) any { return &p.specs }, check: (*datasetParser).checkSpecifications},
	{name: "commodities.json", into: func(p *datasetParser) any { return &p.commodities }, check: (*datasetParser).checkCommodities},
	{name: "trading.json", into: func(p *datasetParser) any { return &p.d.Trading }, check: (*datasetParser).checkTrading},
	{name: "conversions.json", into: func(p *datasetParser) any { return &p.d.Conversions }, check: (*datasetParser).checkConversions},
	{name: "seller_commodities.json", into: func(p *datasetParser) any { return &p.d.SellerCommodities }, check: (*datasetParser).checkSellerCommodities},
}

// datasetParser carries the dataset being built and the indexes one file's
// check leaves for the files after it.
type datasetParser struct {
	d    *Dataset
	errs []error

	specs       fileSpecs
	commodities fileCommodities

	countries map[string]bool        // country ISO codes
	sets      map[string][]Measure   // specification sets by name
	items     map[int]*CommodityItem // commodity items by id
	grades    map[int]int            // grade id → item id
}

func (p *datasetParser) fail(format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf(format, args...))
}

func (p *datasetParser) checkCountries() {
	p.countries = map[string]bool{}
	for _, c := range p.d.Countries {
		if !isoAlpha2.MatchString(c.ISO) || !isoAlpha3.MatchString(c.ISO3) || p.countries[c.ISO] {
			p.fail("countries.json: bad or duplicate code %q/%q", c.ISO, c.ISO3)
		}
		if c.Name == "" || c.Currency == "" || !strings.HasPrefix(c.CallingCode, "+") || c.Locale == "" || c.Continent == "" || c.ZoneDescriptor == "" {
			p.fail("countries.json: %s lacks a name, currency, calling code, locale, continent or zone descriptor", c.ISO)
		}
		if c.DefaultWeight.Name == "" || c.DefaultWeight.Conversion <= 0 {
			p.fail("countries.json: %s has no default weight", c.ISO)
		}
		p.countries[c.ISO] = true
	}
}

func (p *datasetParser) parseRegions(raw []byte) {
	regions, err := parseRegions(raw, p.countries)
	p.d.Regions = regions
	if err != nil {
		p.errs = append(p.errs, err)
	}
}

func (p *datasetParser) checkSpecifications() {
	scale := map[int]fileSpec{}
	for _, s := range p.specs.Specifications {
		if s.ID <= 0 || scale[s.ID].ID != 0 || s.Name == "" || s.Unit == "" || s.ScaleMin >= s.ScaleMax {
			p.fail("specifications.json: bad specification %+v", s)
		}
		scale[s.ID] = s
		p.d.Specifications = append(p.d.Specifications, s.SpecUnit)
	}
	p.sets = map[string][]Measure{}
	for name, ms := range p.specs.Sets {
		seen := map[int]bool{}
		for _, m := range ms {
			s, ok := scale[m.Spec]
			if !ok || seen[m.Spec] || (m.Min == nil && m.Max == nil) {
				p.fail("specifications.json: set %s: bad measure of specification %d", name, m.Spec)
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
				p.fail("specifications.json: set %s: range %v..%v of %s is outside its scale", name, lo, hi, s.Name)
			}
			p.sets[name] = append(p.sets[name], Measure{Specification: s.SpecUnit, Min: lo, Max: hi})
		}
	}
}

// commodityCheck holds what must be unique across the whole commodities file.
type commodityCheck struct {
	tags  map[int]IDName
	types map[int]bool
}

func (p *datasetParser) checkCommodities() {
	cc := commodityCheck{tags: map[int]IDName{}, types: map[int]bool{}}
	for _, t := range p.commodities.Tags {
		cc.tags[t.ID] = t
	}
	p.items, p.grades = map[int]*CommodityItem{}, map[int]int{}
	groupIDs := map[string]bool{}
	for _, g := range p.commodities.Groups {
		if g.ID == "" || groupIDs[g.ID] || !p.countries[g.CountryISO] || g.Type == "" || g.DefaultWeight.Conversion <= 0 || g.WeighbridgeWeight.Conversion <= 0 {
			p.fail("commodities.json: bad group %q", g.ID)
		}
		groupIDs[g.ID] = true
		c := Commodity{ID: g.ID, CountryISO: g.CountryISO, Type: g.Type, DefaultWeight: g.DefaultWeight, WeighbridgeWeight: g.WeighbridgeWeight, Items: []CommodityItem{}}
		for _, it := range g.Items {
			item := p.commodityItem(&cc, g, it)
			p.items[it.ID] = &item
			c.Items = append(c.Items, item)
		}
		p.d.Commodities = append(p.d.Commodities, c)
	}
}

func (p *datasetParser) commodityItem(cc *commodityCheck, g fileGroup, it fileItem) CommodityItem {
	if it.ID <= 0 || p.items[it.ID] != nil || it.Name == "" || len(it.Types) == 0 {
		p.fail("commodities.json: bad or duplicate item %d %q", it.ID, it.Name)
	}
	item := CommodityItem{ID: it.ID, Name: it.Name, Tags: []IDName{}, Weight: g.DefaultWeight, Types: []CommodityType{}}
	if it.Weight != nil {
		item.Weight = *it.Weight
	}
	for _, tid := range it.Tags {
		t, ok := cc.tags[tid]
		if !ok {
			p.fail("commodities.json: item %d has unknown tag %d", it.ID, tid)
		}
		item.Tags = append(item.Tags, t)
	}
	typeNames := map[string]bool{}
	for _, ty := range it.Types {
		if ty.ID <= 0 || cc.types[ty.ID] || ty.Name == "" || typeNames[strings.ToLower(ty.Name)] || len(ty.Grades) == 0 {
			p.fail("commodities.json: item %d: bad or duplicate type %d %q", it.ID, ty.ID, ty.Name)
		}
		cc.types[ty.ID], typeNames[strings.ToLower(ty.Name)] = true, true
		ct := CommodityType{ID: ty.ID, Name: ty.Name, Grades: []Grade{}}
		gradeNames := map[string]bool{}
		for _, gr := range ty.Grades {
			if _, dup := p.grades[gr.ID]; gr.ID <= 0 || dup || gr.Name == "" || gradeNames[strings.ToLower(gr.Name)] {
				p.fail("commodities.json: type %d: bad or duplicate grade %d %q", ty.ID, gr.ID, gr.Name)
			}
			p.grades[gr.ID], gradeNames[strings.ToLower(gr.Name)] = it.ID, true
			ct.Grades = append(ct.Grades, p.grade(gr))
		}
		item.Types = append(item.Types, ct)
	}
	return item
}

func (p *datasetParser) grade(gr fileGrade) Grade {
	ms, ok := p.sets[gr.Spec]
	if !ok {
		p.fail("commodities.json: grade %d names unknown specification set %q", gr.ID, gr.Spec)
	}
	p.d.Measures[gr.ID] = ms
	vs, err := normaliseVarieties(gr.Varieties)
	if err != nil {
		p.fail("commodities.json: grade %d: %v", gr.ID, err)
	}
	return Grade{ID: gr.ID, Name: gr.Name, Varieties: vs}
}

func (p *datasetParser) checkTrading() {
	t := p.d.Trading
	p.checkReasons("settlementDeductionReasons", t.SettlementDeductionReasons)
	p.checkReasons("settlementBonusReasons", t.SettlementBonusReasons)
	p.checkReasons("closeListingReasons", t.CloseListingReasons)
	exIDs := map[int]bool{}
	for _, e := range t.ExFarmPriceCommodities {
		if e.ID <= 0 || exIDs[e.ID] || e.Name == "" || p.items[e.CommodityID] == nil {
			p.fail("trading.json: bad ex-farm price commodity %d", e.ID)
		}
		exIDs[e.ID] = true
		for _, g := range e.Grades {
			if p.grades[g] != e.CommodityID {
				p.fail("trading.json: ex-farm price commodity %d: grade %d is not a grade of commodity %d", e.ID, g, e.CommodityID)
			}
		}
	}
	if st := t.SeamlessTrading; st.OpenPeriodMinutes <= 0 || st.ReviewPeriodMinutes <= 0 || st.BidExpiryMinutes <= 0 {
		p.fail("trading.json: seamlessTrading periods must be positive")
	}
}

func (p *datasetParser) checkReasons(kind string, rs []Reason) {
	seen := map[int]bool{}
	for _, r := range rs {
		if r.ID <= 0 || seen[r.ID] || r.Description == "" {
			p.fail("trading.json: %s: bad or duplicate reason %d", kind, r.ID)
		}
		seen[r.ID] = true
	}
}

func (p *datasetParser) checkConversions() {
	for k, v := range p.d.Conversions {
		if k == "" || v <= 0 {
			p.fail("conversions.json: bad conversion %q", k)
		}
	}
}

func (p *datasetParser) checkSellerCommodities() {
	sellers := map[string]bool{}
	for _, s := range p.d.SellerCommodities {
		if s.ID == "" || s.Name == "" || sellers[s.ID] {
			p.fail("seller_commodities.json: bad or duplicate %q", s.ID)
		}
		sellers[s.ID] = true
	}
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
