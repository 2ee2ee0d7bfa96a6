package listings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agritrade/api/livestock/internal/categories"
	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/httpx"
)

// The request bodies are read into a generic JSON tree and walked field by
// field, rather than unmarshalled into structs: that tells a missing field from
// a null one (location and files are required but nullable), and reports every
// wrong type at once with its full path, where encoding/json stops at the first.

// object is a JSON object under validation; f collects failures at its path.
type object struct {
	m map[string]any
	f *apierr.Fields
}

// decodeBody parses a JSON body whose top level must be an object. Malformed
// JSON answers bad_request; a top level of another type is a field failure.
func decodeBody(raw []byte) (object, *apierr.Fields, error) {
	f := &apierr.Fields{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return object{}, nil, apierr.Wrap(err, apierr.CodeBadRequest, "the request body is not valid JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return object{}, nil, apierr.BadRequest("the request body has data after the JSON value")
	}
	m, ok := v.(map[string]any)
	if !ok {
		f.Add("", "type", "the body must be a JSON object, not "+jsonType(v), map[string]any{"expected": "object", "actual": jsonType(v)})
		return object{f: f}, f, nil
	}
	return object{m: m, f: f}, f, nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// present tells whether the key is in the object (null included).
func (o object) present(key string) bool {
	_, ok := o.m[key]
	return ok
}

// value returns the member when it is present and not null; a missing required
// one is recorded.
func (o object) value(key string, required bool) (any, bool) {
	v, ok := o.m[key]
	if !ok || v == nil {
		if required {
			o.f.Add(key, "required", "is required", nil)
		}
		return nil, false
	}
	return v, true
}

func (o object) typeError(key, want string, v any) {
	o.f.Add(key, "type", fmt.Sprintf("must be %s, not %s", want, jsonType(v)), map[string]any{"expected": want, "actual": jsonType(v)})
}

// str reads a trimmed string of at most max characters; a required one must not be blank.
func (o object) str(key string, required bool, max int) (string, bool) {
	v, ok := o.value(key, required)
	if !ok {
		return "", false
	}
	s, isStr := v.(string)
	if !isStr {
		o.typeError(key, "a string", v)
		return "", false
	}
	s = strings.TrimSpace(s)
	if s == "" {
		if required {
			o.f.Add(key, "required", "must not be blank", nil)
		}
		return "", false
	}
	if !o.f.MaxLen(key, s, max) {
		return "", false
	}
	return s, true
}

// enum reads a string that must be one of allowed; case and surrounding blanks
// are forgiven (the stored value is the canonical lower-case one).
func (o object) enum(key string, required bool, allowed []string) (string, bool) {
	s, ok := o.str(key, required, 100)
	if !ok {
		return "", false
	}
	s = strings.ToLower(s)
	if !o.f.OneOf(key, s, allowed...) {
		return "", false
	}
	return s, true
}

func (o object) boolean(key string, required bool) (bool, bool) {
	v, ok := o.value(key, required)
	if !ok {
		return false, false
	}
	b, isBool := v.(bool)
	if !isBool {
		o.typeError(key, "a boolean", v)
		return false, false
	}
	return b, true
}

func (o object) number(key string, required bool) (float64, bool) {
	v, ok := o.value(key, required)
	if !ok {
		return 0, false
	}
	n, isNum := v.(json.Number)
	if !isNum {
		o.typeError(key, "a number", v)
		return 0, false
	}
	x, err := n.Float64()
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		o.f.Add(key, "range", "is not a representable number", map[string]any{"actual": n.String()})
		return 0, false
	}
	return x, true
}

// numberIn reads a number within [min, max].
func (o object) numberIn(key string, required bool, min, max float64) (float64, bool) {
	x, ok := o.number(key, required)
	if !ok {
		return 0, false
	}
	if x < min || x > max {
		o.f.Add(key, "range", fmt.Sprintf("must be between %g and %g", min, max), map[string]any{"min": min, "max": max, "actual": x})
		return 0, false
	}
	return x, true
}

// integerIn reads a whole number within [min, max].
func (o object) integerIn(key string, required bool, min, max int) (int, bool) {
	x, ok := o.numberIn(key, required, float64(min), float64(max))
	if !ok {
		return 0, false
	}
	if x != math.Trunc(x) {
		o.f.Add(key, "integer", "must be a whole number", map[string]any{"actual": x})
		return 0, false
	}
	return int(x), true
}

// child reads a nested object; its failures are recorded under key.
func (o object) child(key string, required, nullable bool) (object, bool) {
	v, present := o.m[key]
	if !present || (v == nil && !nullable) {
		if required {
			o.f.Add(key, "required", "is required", nil)
		}
		return object{}, false
	}
	if v == nil {
		return object{}, false
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		o.typeError(key, "an object", v)
		return object{}, false
	}
	return object{m: m, f: o.f.At(key)}, true
}

// list reads an array of at most max items; lf records failures of its items.
func (o object) list(key string, required, nullable bool, max int) (items []any, lf *apierr.Fields, ok bool) {
	v, present := o.m[key]
	if !present || (v == nil && !nullable) {
		if required {
			o.f.Add(key, "required", "is required", nil)
		}
		return nil, nil, false
	}
	if v == nil {
		return nil, nil, false
	}
	a, isArr := v.([]any)
	if !isArr {
		o.typeError(key, "an array", v)
		return nil, nil, false
	}
	if len(a) > max {
		o.f.Add(key, "max_items", fmt.Sprintf("must hold at most %d items", max), map[string]any{"max": max, "actual": len(a)})
		return nil, nil, false
	}
	return a, o.f.At(key), true
}

// element wraps the i-th item of a list for the field readers.
func element(lf *apierr.Fields, i int, v any) object {
	return object{m: map[string]any{"": v}, f: lf.Index(i)}
}

// strs reads an array of non-blank strings, without duplicates.
func (o object) strs(key string, required bool, maxItems, maxLen int) ([]string, bool) {
	items, lf, ok := o.list(key, required, false, maxItems)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(items))
	valid := true
	for i, it := range items {
		s, ok := element(lf, i, it).str("", true, maxLen)
		valid = valid && ok
		if ok && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, valid
}

// enums reads an array of values of allowed, without duplicates.
func (o object) enums(key string, required bool, allowed []string) ([]string, bool) {
	items, lf, ok := o.list(key, required, false, len(allowed)*2)
	if !ok {
		return []string{}, false
	}
	out := make([]string, 0, len(items))
	valid := true
	for i, it := range items {
		s, ok := element(lf, i, it).enum("", true, allowed)
		valid = valid && ok
		if ok && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, valid
}

// Draft is a validated create body.
type Draft struct {
	Type        string
	IsDraft     bool
	CategoryIDs []int
	Location    *Location
	Price       Price
	// Files are the references as given (ids); the service resolves them.
	Files []filestore.Ref
	// filesValid tells that the files are well-formed, ready to be resolved.
	filesValid  bool
	Description string
	Tags        []string
	Properties  Properties
}

// ParseDraft validates the create body of a listing of a kind. Malformed JSON
// answers bad_request; failing fields are collected in the returned Fields, for
// the service to complete with the checks that need the database (categories,
// files) before it answers them all at once.
func ParseDraft(kind categories.Kind, raw []byte) (*Draft, *apierr.Fields, error) {
	o, f, err := decodeBody(raw)
	if err != nil {
		return nil, nil, err
	}
	d := &Draft{}
	if o.m == nil {
		return d, f, nil
	}
	d.Type, _ = o.enum("type", true, Types)
	d.IsDraft, _ = o.boolean("isDraft", true)
	d.CategoryIDs, _ = o.categoryIDs("categoryIds", true)
	d.Location = o.location("location", true)
	if p, ok := o.price("price", true); ok {
		d.Price = *p
	}
	d.Files, d.filesValid = o.files("files", true)
	d.Description, _ = o.str("description", true, MaxDescription)
	d.Tags, _ = o.strs("tags", true, MaxTags, MaxTagLen)
	d.Properties = o.properties(kind, true)
	return d, f, nil
}

// Patch is a validated edit: only the Set fields change.
type Patch struct {
	Description   *string
	Price         *Price
	Tags          []string
	SetTags       bool
	Files         []filestore.Ref
	SetFiles      bool
	Location      *Location
	SetLocation   bool
	CategoryIDs   []int
	SetCategories bool
	Properties    Properties
	SetProperties bool
	IsDraft       *bool
}

// patchKeys are the members an edit may carry.
var patchKeys = []string{"description", "price", "tags", "files", "location", "categoryIds", "properties", "isDraft"}

// ParsePatch validates an edit of a listing of a kind: each member given is
// validated as at creation; at least one must be given.
func ParsePatch(kind categories.Kind, raw []byte) (*Patch, *apierr.Fields, error) {
	o, f, err := decodeBody(raw)
	if err != nil {
		return nil, nil, err
	}
	p := &Patch{}
	if o.m == nil {
		return p, f, nil
	}
	given := false
	for _, k := range patchKeys {
		given = given || o.present(k)
	}
	if !given {
		f.Add("", "min_properties", "give at least one of "+strings.Join(patchKeys, ", "), map[string]any{"allowed": patchKeys})
		return p, f, nil
	}
	if o.present("description") {
		if s, ok := o.str("description", true, MaxDescription); ok {
			p.Description = &s
		}
	}
	if o.present("price") {
		p.Price, _ = o.price("price", true)
	}
	if o.present("tags") {
		p.Tags, p.SetTags = o.strs("tags", true, MaxTags, MaxTagLen)
	}
	if o.present("files") {
		p.Files, p.SetFiles = o.files("files", true)
	}
	if o.present("location") {
		before := len(f.List())
		p.Location = o.location("location", true)
		p.SetLocation = len(f.List()) == before
	}
	if o.present("categoryIds") {
		p.CategoryIDs, p.SetCategories = o.categoryIDs("categoryIds", true)
	}
	if o.present("properties") {
		p.Properties = o.properties(kind, true)
		p.SetProperties = p.Properties != nil
	}
	if o.present("isDraft") {
		if b, ok := o.boolean("isDraft", true); ok {
			p.IsDraft = &b
		}
	}
	return p, f, nil
}

// ParseClose validates a close body and answers the new status.
func ParseClose(raw []byte) (string, error) {
	o, f, err := decodeBody(raw)
	if err != nil {
		return "", err
	}
	var status string
	if o.m != nil {
		status, _ = o.enum("status", true, CloseReasons)
	}
	return status, f.Err()
}

// ParseReport validates a report body.
func ParseReport(raw []byte) (reason string, message *string, err error) {
	o, f, err := decodeBody(raw)
	if err != nil {
		return "", nil, err
	}
	if o.m != nil {
		reason, _ = o.enum("reason", true, ReportReasons)
		if !o.present("message") {
			f.Add("message", "required", "is required (null when there is nothing to add)", nil)
		} else if s, ok := o.str("message", false, MaxReportText); ok {
			message = &s
		}
	}
	return reason, message, f.Err()
}

// ParseReview validates an admin's review body and answers the decision.
func ParseReview(raw []byte) (string, error) {
	o, f, err := decodeBody(raw)
	if err != nil {
		return "", err
	}
	var decision string
	if o.m != nil {
		decision, _ = o.enum("decision", true, Decisions)
	}
	return decision, f.Err()
}

// categoryIDs reads the category ids: whole positive numbers, no duplicates.
// The answer keeps the positions of the body (0 where an item failed), so that
// the service's existence check reports "categoryIds[i]" at the right i.
func (o object) categoryIDs(key string, required bool) ([]int, bool) {
	items, lf, ok := o.list(key, required, false, MaxCategories)
	if !ok {
		return nil, false
	}
	out := make([]int, len(items))
	valid := true
	for i, it := range items {
		id, ok := element(lf, i, it).integerIn("", true, 1, math.MaxInt32)
		if ok && slices.Contains(out[:i], id) {
			lf.Index(i).Add("", "duplicate", fmt.Sprintf("category %d is listed twice", id), map[string]any{"actual": id})
			ok = false
		}
		if ok {
			out[i] = id
		}
		valid = valid && ok
	}
	return out, valid
}

var (
	countryISO = regexp.MustCompile(`^[A-Z]{2}$`)
	regionISO  = regexp.MustCompile(`^[A-Z]{2}-[A-Z0-9]{1,3}$`)
)

// location reads a location (null allowed): coordinates are required and in
// range, the address is optional with ISO-coded country and region.
func (o object) location(key string, required bool) *Location {
	c, ok := o.child(key, required, true)
	if !ok {
		return nil
	}
	loc := &Location{}
	loc.ThreeWordAddress, _ = c.str("threeWordAddress", false, MaxText)
	if a, ok := c.child("address", false, true); ok {
		ad := &loc.Address
		for _, fld := range []struct {
			key string
			dst *string
		}{{"name", &ad.Name}, {"line1", &ad.Line1}, {"line2", &ad.Line2}, {"line3", &ad.Line3}, {"city", &ad.City},
			{"region", &ad.Region}, {"postcode", &ad.Postcode}, {"countryName", &ad.CountryName}} {
			*fld.dst, _ = a.str(fld.key, false, MaxText)
		}
		if s, ok := a.str("countryISO", false, 2+MaxText); ok {
			s = strings.ToUpper(s)
			if a.f.Check(countryISO.MatchString(s), "countryISO", "format", "must be an ISO 3166-1 alpha-2 code, e.g. GB") {
				ad.CountryISO = s
			}
		}
		if s, ok := a.str("regionISO", false, MaxText); ok {
			s = strings.ToUpper(s)
			if a.f.Check(regionISO.MatchString(s), "regionISO", "format", "must be an ISO 3166-2 code, e.g. GB-NYK") {
				ad.RegionISO = s
			}
		}
	}
	if co, ok := c.child("coordinates", true, false); ok {
		loc.Coordinates.Lat, _ = co.numberIn("lat", true, -90, 90)
		loc.Coordinates.Lon, _ = co.numberIn("lon", true, -180, 180)
	}
	return loc
}

// price reads the price object: every amount in the currency of pricePerUnit,
// and minPrice not above maxPrice.
func (o object) price(key string, required bool) (*Price, bool) {
	c, ok := o.child(key, required, false)
	if !ok {
		return nil, false
	}
	before := len(c.f.List())
	p := &Price{}
	p.Type, _ = c.enum("type", true, PriceTypes)
	if m := c.money("pricePerUnit", true, false); m != nil {
		p.PricePerUnit = *m
	}
	p.MinPrice = c.money("minPrice", false, true)
	p.MaxPrice = c.money("maxPrice", false, true)
	for _, b := range []struct {
		key string
		m   *Money
	}{{"minPrice", p.MinPrice}, {"maxPrice", p.MaxPrice}} {
		if b.m != nil && p.PricePerUnit.Currency != "" && b.m.Currency != "" && b.m.Currency != p.PricePerUnit.Currency {
			c.f.Add(b.key+".currency", "currency", "must be the currency of pricePerUnit ("+p.PricePerUnit.Currency+")",
				map[string]any{"expected": p.PricePerUnit.Currency, "actual": b.m.Currency})
		}
	}
	if p.MinPrice != nil && p.MaxPrice != nil && p.MinPrice.Amount > p.MaxPrice.Amount {
		c.f.Add("maxPrice.amount", "range", "must not be below minPrice.amount", map[string]any{"min": p.MinPrice.Amount, "actual": p.MaxPrice.Amount})
	}
	return p, len(c.f.List()) == before
}

// money reads an amount (0 up to MaxAmount) in an ISO 4217 currency.
func (o object) money(key string, required, nullable bool) *Money {
	c, ok := o.child(key, required, nullable)
	if !ok {
		return nil
	}
	m := &Money{}
	m.Amount, _ = c.numberIn("amount", true, 0, MaxAmount)
	if s, ok := c.str("currency", true, 3); ok {
		s = strings.ToUpper(s)
		if c.f.Check(IsCurrency(s), "currency", "currency", "must be an ISO 4217 currency code, e.g. GBP") {
			m.Currency = s
		}
	}
	return m
}

// files reads the file references (null allowed): objects with a string id.
// Blank, duplicate and unknown ids are filestore.Resolve's to report.
func (o object) files(key string, required bool) ([]filestore.Ref, bool) {
	items, lf, ok := o.list(key, required, true, MaxFiles)
	if !ok {
		return nil, !o.present(key) || o.m[key] == nil
	}
	refs := make([]filestore.Ref, 0, len(items))
	valid := true
	for i, it := range items {
		el, ok := element(lf, i, it).child("", true, false)
		if !ok {
			valid = false
			continue
		}
		var id string
		if v, ok := el.m["id"]; ok && v != nil {
			if id, ok = v.(string); !ok {
				el.typeError("id", "a string", v)
				valid = false
			}
		}
		refs = append(refs, filestore.Ref{ID: id})
	}
	return refs, valid
}

// properties reads the kind's properties. Feed and bedding carry none: null or
// an empty object is accepted, anything else is refused.
func (o object) properties(kind categories.Kind, required bool) Properties {
	if !kind.HasProperties() {
		if v, ok := o.value("properties", false); ok {
			if m, isObj := v.(map[string]any); !isObj || len(m) > 0 {
				o.f.Add("properties", "not_allowed", fmt.Sprintf("%s listings carry no properties", kind), nil)
			}
		}
		return nil
	}
	c, ok := o.child("properties", required, false)
	if !ok {
		return nil
	}
	switch kind {
	case categories.Sheep:
		return c.sheep()
	case categories.Cattle:
		return c.cattle()
	default:
		return c.dog()
	}
}

func (o object) sheep() *SheepProperties {
	p := &SheepProperties{}
	p.BreedType, _ = o.enum("breedType", true, categories.Values(categories.Sheep, categories.GroupBreed))
	p.BreedSociety, _ = o.str("breedSociety", false, MaxText)
	p.Type, _ = o.enums("type", false, categories.Values(categories.Sheep, categories.GroupType))
	p.AdditionalInfo, _ = o.enums("additionalInfo", false, AddInfo)
	p.Sexes, _ = o.enum("sexes", true, Sexes)
	if h, ok := o.child("health", false, true); ok {
		p.Health = &SheepHealth{}
		p.Health.Data, _ = h.str("data", false, MaxNotes)
	}
	return p
}

func (o object) cattle() *CattleProperties {
	p := &CattleProperties{}
	p.Type, _ = o.enum("type", false, categories.Values(categories.Cattle, categories.GroupType))
	p.BreedType, _ = o.enum("breedType", true, categories.Values(categories.Cattle, categories.GroupBreed))
	p.BreedSociety, _ = o.str("breedSociety", false, MaxText)
	p.AdditionalInfo, _ = o.enums("additionalInfo", false, AddInfo)
	p.Sexes, _ = o.enum("sexes", true, Sexes)
	if q, ok := o.integerIn("quantity", false, 1, MaxQuantity); ok {
		p.Quantity = &q
	}
	p.SocietyNumber, _ = o.str("societyNumber", false, 50)
	if a, ok := o.numberIn("minAge", false, 0, MaxAgeMonths); ok {
		p.MinAge = &a
	}
	if a, ok := o.numberIn("maxAge", false, 0, MaxAgeMonths); ok {
		p.MaxAge = &a
	}
	if p.MinAge != nil && p.MaxAge != nil && *p.MinAge > *p.MaxAge {
		o.f.Add("maxAge", "range", "must not be below minAge", map[string]any{"min": *p.MinAge, "actual": *p.MaxAge})
	}
	if h, ok := o.child("health", false, true); ok {
		p.Health = &CattleHealth{}
		p.Health.TBStatus, _ = h.enum("tbStatus", false, TBStatuses)
		p.Health.TBDetails, _ = h.str("tbDetails", false, MaxNotes)
		p.Health.TBInterval, _ = h.enum("tbInterval", false, TBIntervals)
		p.Health.Data, _ = h.str("data", false, MaxNotes)
	}
	if perf, ok := o.child("performance", false, true); ok {
		p.Performance = &CattlePerformance{
			AverageWeight:       perf.weight("averageWeight", 5000),
			DailyLiveWeightGain: perf.weight("dailyLiveWeightGain", 10),
		}
	}
	return p
}

// weight reads a weight object; max bounds the weight in kilograms. A missing
// conversion is filled from the unit.
func (o object) weight(key string, maxKg float64) *Weight {
	c, ok := o.child(key, false, true)
	if !ok {
		return nil
	}
	w := &Weight{}
	units := make([]string, 0, len(WeightUnits))
	for u := range WeightUnits {
		units = append(units, u)
	}
	slices.Sort(units)
	w.Name, _ = c.enum("name", true, units)
	if conv, ok := c.number("conversion", false); ok {
		if c.f.Check(conv > 0, "conversion", "range", "must be greater than 0") {
			w.Conversion = conv
		}
	} else if w.Name != "" {
		w.Conversion = WeightUnits[w.Name]
	}
	if w.Name != "" {
		w.Weight, _ = c.numberIn("weight", true, 0, maxKg/WeightUnits[w.Name])
	} else {
		w.Weight, _ = c.number("weight", true)
	}
	return w
}

func (o object) dog() *DogProperties {
	p := &DogProperties{}
	p.BreedType, _ = o.enum("breedType", true, categories.Values(categories.WorkingDog, categories.GroupBreed))
	p.BreedSociety, _ = o.str("breedSociety", false, MaxText)
	p.Sex, _ = o.enum("sex", true, DogSexes)
	if r, ok := o.child("registration", false, true); ok {
		reg := &DogRegistration{}
		if s, ok := r.str("dateOfBirth", false, 40); ok {
			t, _, err := httpx.ParseDate(s)
			now := time.Now().UTC()
			switch {
			case err != nil:
				r.f.Add("dateOfBirth", "format", "must be a date (YYYY-MM-DD)", map[string]any{"actual": s})
			case t.After(now) || t.Year() < earliestDogYear:
				r.f.Add("dateOfBirth", "range", fmt.Sprintf("must be between %d-01-01 and today", earliestDogYear), map[string]any{"actual": s})
			default:
				reg.DateOfBirth = t.Format(dateFormat)
			}
		}
		reg.IsRegistered, _ = r.boolean("isRegistered", false)
		reg.RegistrationNumber, _ = r.str("registrationNumber", false, 50)
		if _, isStr := r.m["registrationNumber"].(string); reg.IsRegistered && reg.RegistrationNumber == "" && (isStr || r.m["registrationNumber"] == nil) {
			r.f.Add("registrationNumber", "required", "is required when isRegistered is true", nil)
		}
		reg.Name, _ = r.str("name", false, MaxText)
		p.Registration = reg
	}
	return p
}
