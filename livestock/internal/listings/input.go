package listings

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agritrade/api/livestock/internal/categories"
	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/geo"
	"github.com/agritrade/api/platform/httpx"
)

// The request bodies are structs bound by the platform's binder (httpx):
// every wrong type and unknown member is reported at once with its full path,
// and httpx.Nullable tells a missing member from a null one (location and
// files are required but nullable; an edit changes only what it names). The
// checks beyond types are the bodies' Validate methods; a body whose types
// fail gets both at once.

// checked is a body that validates itself into its results.
type checked interface {
	Validate(f *apierr.Fields)
}

// bind binds raw into b and answers every failure: the binder's and b's own
// (the binder runs Validate itself when the types fail).
func bind(raw []byte, b checked) (*apierr.Fields, error) {
	f, err := httpx.Decode(raw, b)
	if err != nil {
		return nil, err
	}
	if f.Empty() {
		b.Validate(f)
	}
	return f, nil
}

// str reads a trimmed string of at most max characters; a required one must
// not be blank.
func str(f *apierr.Fields, path string, p *string, required bool, max int) (string, bool) {
	if p == nil {
		if required {
			f.Add(path, "required", "is required", nil)
		}
		return "", false
	}
	s := strings.TrimSpace(*p)
	if s == "" {
		if required {
			f.Add(path, "required", "must not be blank", nil)
		}
		return "", false
	}
	if !f.MaxLen(path, s, max) {
		return "", false
	}
	return s, true
}

// enum reads a string that must be one of allowed; case and surrounding blanks
// are forgiven (the stored value is the canonical lower-case one).
func enum(f *apierr.Fields, path string, p *string, required bool, allowed []string) (string, bool) {
	s, ok := str(f, path, p, required, 100)
	if !ok {
		return "", false
	}
	s = strings.ToLower(s)
	if !f.OneOf(path, s, allowed...) {
		return "", false
	}
	return s, true
}

// numberIn checks a number within [min, max].
func numberIn(f *apierr.Fields, path string, p *float64, required bool, min, max float64) (float64, bool) {
	if p == nil {
		if required {
			f.Add(path, "required", "is required", nil)
		}
		return 0, false
	}
	if x := *p; x < min || x > max {
		f.Add(path, "range", fmt.Sprintf("must be between %g and %g", min, max), map[string]any{"min": min, "max": max, "actual": x})
		return 0, false
	}
	return *p, true
}

// maxItems records a max_items failure when list is longer than max.
func maxItems(f *apierr.Fields, path string, n, max int) bool {
	if n > max {
		f.Add(path, "max_items", fmt.Sprintf("must hold at most %d items", max), map[string]any{"max": max, "actual": n})
		return false
	}
	return true
}

// strs reads a list of non-blank strings, without duplicates.
func strs(f *apierr.Fields, path string, items []string, maxN, maxLen int) ([]string, bool) {
	if !maxItems(f, path, len(items), maxN) {
		return nil, false
	}
	lf := f.At(path)
	out := make([]string, 0, len(items))
	valid := true
	for i := range items {
		s, ok := str(lf.Index(i), "", &items[i], true, maxLen)
		valid = valid && ok
		if ok && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, valid
}

// enums reads an optional list of values of allowed, without duplicates.
func enums(f *apierr.Fields, path string, items []string, allowed []string) []string {
	out := make([]string, 0, len(items))
	if !maxItems(f, path, len(items), len(allowed)*2) {
		return out
	}
	lf := f.At(path)
	for i := range items {
		if s, ok := enum(lf.Index(i), "", &items[i], true, allowed); ok && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// body is the members common to the create and edit bodies of every kind;
// each kind's body adds its properties.
type body struct {
	Type        httpx.Nullable[string]           `json:"type"`
	IsDraft     httpx.Nullable[bool]             `json:"isDraft"`
	CategoryIDs httpx.Nullable[[]int]            `json:"categoryIds"`
	Location    httpx.Nullable[locationBody]     `json:"location"`
	Price       httpx.Nullable[priceBody]        `json:"price"`
	Files       httpx.Nullable[[]*filestore.Ref] `json:"files"`
	Description httpx.Nullable[string]           `json:"description"`
	Tags        httpx.Nullable[[]string]         `json:"tags"`

	// patch marks an edit: only the members given are checked, each as at
	// creation; the results go to d (create) or p (edit).
	patch bool
	d     Draft
	p     Patch
}

// kindBody is the body of a kind: the common members and its properties.
type kindBody interface {
	checked
	common() *body
}

type sheepBody struct {
	body
	Properties httpx.Nullable[sheepProperties] `json:"properties"`
}

type cattleBody struct {
	body
	Properties httpx.Nullable[cattleProperties] `json:"properties"`
}

type dogBody struct {
	body
	Properties httpx.Nullable[dogProperties] `json:"properties"`
}

// plainBody is the body of feed and bedding: they carry no properties, so
// null or an empty object is accepted and anything else refused.
type plainBody struct {
	body
	Properties httpx.Nullable[noProperties] `json:"properties"`
}

func (b *body) common() *body { return b }

func (b *sheepBody) Validate(f *apierr.Fields) {
	b.check(f, b.Properties.Set, func() Properties {
		if p := b.Properties.Value; p != nil {
			return p.check(f.At("properties"))
		}
		f.Add("properties", "required", "is required", nil)
		return nil
	})
}

func (b *cattleBody) Validate(f *apierr.Fields) {
	b.check(f, b.Properties.Set, func() Properties {
		if p := b.Properties.Value; p != nil {
			return p.check(f.At("properties"))
		}
		f.Add("properties", "required", "is required", nil)
		return nil
	})
}

func (b *dogBody) Validate(f *apierr.Fields) {
	b.check(f, b.Properties.Set, func() Properties {
		if p := b.Properties.Value; p != nil {
			return p.check(f.At("properties"))
		}
		f.Add("properties", "required", "is required", nil)
		return nil
	})
}

func (b *plainBody) Validate(f *apierr.Fields) {
	b.check(f, b.Properties.Set, func() Properties {
		if p := b.Properties.Value; p != nil && !p.empty {
			f.Add("properties", "not_allowed", fmt.Sprintf("%s listings carry no properties", b.kind()), nil)
		}
		return nil
	})
}

// kind names feed or bedding in the message (they share plainBody).
func (b *plainBody) kind() categories.Kind { return b.d.kind }

// noProperties records whether the properties member was an empty object.
type noProperties struct{ empty bool }

// UnmarshalJSON takes any JSON: only {} (or null, which never gets here) is
// allowed, and Validate says so.
func (n *noProperties) UnmarshalJSON(raw []byte) error {
	n.empty = bytes.Equal(bytes.TrimSpace(raw), []byte("{}"))
	return nil
}

func newBody(kind categories.Kind) kindBody {
	switch kind {
	case categories.Sheep:
		return &sheepBody{}
	case categories.Cattle:
		return &cattleBody{}
	case categories.WorkingDog:
		return &dogBody{}
	}
	b := &plainBody{}
	b.d.kind = kind
	return b
}

// patchKeys are the members an edit may carry.
var patchKeys = []string{"description", "price", "tags", "files", "location", "categoryIds", "properties", "isDraft"}

// check validates the common members into d (create) or p (edit), and the
// properties with props.
func (b *body) check(f *apierr.Fields, propsSet bool, props func() Properties) {
	if b.patch {
		b.checkPatch(f, propsSet, props)
		return
	}
	d := &b.d
	d.Type, _ = enum(f, "type", b.Type.Value, true, Types)
	if b.IsDraft.Value == nil {
		f.Add("isDraft", "required", "is required", nil)
	} else {
		d.IsDraft = *b.IsDraft.Value
	}
	d.CategoryIDs, _ = categoryIDs(f, b.CategoryIDs.Value)
	if !b.Location.Set {
		f.Add("location", "required", "is required", nil)
	}
	d.Location = location(f.At("location"), b.Location.Value)
	if p, ok := price(f, b.Price.Value); ok {
		d.Price = *p
	}
	d.Files, d.filesValid = files(f, b.Files)
	d.Description, _ = str(f, "description", b.Description.Value, true, MaxDescription)
	if b.Tags.Value == nil {
		f.Add("tags", "required", "is required", nil)
	} else {
		d.Tags, _ = strs(f, "tags", *b.Tags.Value, MaxTags, MaxTagLen)
	}
	d.Properties = props()
}

func (b *body) checkPatch(f *apierr.Fields, propsSet bool, props func() Properties) {
	p := &b.p
	if b.Type.Set {
		// A member of the create body that no edit takes: refused like any
		// unknown member (ListingUpdate has no type), not ignored.
		f.Add("type", httpx.CodeUnknownField, "is not a member an edit takes (a listing's type cannot change)", map[string]any{"allowed": patchKeys})
	}
	if !b.Description.Set && !b.Price.Set && !b.Tags.Set && !b.Files.Set && !b.Location.Set && !b.CategoryIDs.Set && !propsSet && !b.IsDraft.Set {
		f.Add("", "min_properties", "give at least one of "+strings.Join(patchKeys, ", "), map[string]any{"allowed": patchKeys})
		return
	}
	if b.Description.Set {
		if s, ok := str(f, "description", b.Description.Value, true, MaxDescription); ok {
			p.Description = &s
		}
	}
	if b.Price.Set {
		p.Price, _ = price(f, b.Price.Value)
	}
	if b.Tags.Set {
		if b.Tags.Value == nil {
			f.Add("tags", "required", "is required", nil)
		} else {
			p.Tags, p.SetTags = strs(f, "tags", *b.Tags.Value, MaxTags, MaxTagLen)
		}
	}
	if b.Files.Set {
		p.Files, p.SetFiles = files(f, b.Files)
	}
	if b.Location.Set {
		before := len(f.List())
		p.Location = location(f.At("location"), b.Location.Value)
		p.SetLocation = len(f.List()) == before
	}
	if b.CategoryIDs.Set {
		p.CategoryIDs, p.SetCategories = categoryIDs(f, b.CategoryIDs.Value)
	}
	if propsSet {
		p.Properties = props()
		p.SetProperties = p.Properties != nil
	}
	if b.IsDraft.Set {
		if b.IsDraft.Value == nil {
			f.Add("isDraft", "required", "is required", nil)
		} else {
			v := *b.IsDraft.Value
			p.IsDraft = &v
		}
	}
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
	kind        categories.Kind
}

// ParseDraft validates the create body of a listing of a kind. Malformed JSON
// answers bad_request; failing fields are collected in the returned Fields, for
// the service to complete with the checks that need the database (categories,
// files) before it answers them all at once.
func ParseDraft(kind categories.Kind, raw []byte) (*Draft, *apierr.Fields, error) {
	b := newBody(kind)
	f, err := bind(raw, b)
	if err != nil {
		return nil, nil, err
	}
	d := &b.common().d
	d.kind = kind
	if d.filesValid {
		// A member of the wrong type under files leaves nothing to resolve.
		for _, fe := range f.List() {
			if fe.Path == "files" || strings.HasPrefix(fe.Path, "files[") {
				d.filesValid = false
				break
			}
		}
	}
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

// ParsePatch validates an edit of a listing of a kind: each member given is
// validated as at creation; at least one must be given.
func ParsePatch(kind categories.Kind, raw []byte) (*Patch, *apierr.Fields, error) {
	b := newBody(kind)
	b.common().patch = true
	f, err := bind(raw, b)
	if err != nil {
		return nil, nil, err
	}
	return &b.common().p, f, nil
}

// closeBody is the close body.
type closeBody struct {
	Status *string `json:"status"`
	status string
}

func (b *closeBody) Validate(f *apierr.Fields) {
	b.status, _ = enum(f, "status", b.Status, true, CloseReasons)
}

// ParseClose validates a close body and answers the new status.
func ParseClose(raw []byte) (string, error) {
	var b closeBody
	f, err := bind(raw, &b)
	if err != nil {
		return "", err
	}
	return b.status, f.Err()
}

// reportBody is the report body: message is required but may be null.
type reportBody struct {
	Reason  *string                `json:"reason"`
	Message httpx.Nullable[string] `json:"message"`
	reason  string
	message *string
}

func (b *reportBody) Validate(f *apierr.Fields) {
	b.reason, _ = enum(f, "reason", b.Reason, true, ReportReasons)
	if !b.Message.Set {
		f.Add("message", "required", "is required (null when there is nothing to add)", nil)
	} else if s, ok := str(f, "message", b.Message.Value, false, MaxReportText); ok {
		b.message = &s
	}
}

// ParseReport validates a report body.
func ParseReport(raw []byte) (reason string, message *string, err error) {
	var b reportBody
	f, err := bind(raw, &b)
	if err != nil {
		return "", nil, err
	}
	return b.reason, b.message, f.Err()
}

// reviewBody is an admin's review body.
type reviewBody struct {
	Decision *string `json:"decision"`
	decision string
}

func (b *reviewBody) Validate(f *apierr.Fields) {
	b.decision, _ = enum(f, "decision", b.Decision, true, Decisions)
}

// ParseReview validates an admin's review body and answers the decision.
func ParseReview(raw []byte) (string, error) {
	var b reviewBody
	f, err := bind(raw, &b)
	if err != nil {
		return "", err
	}
	return b.decision, f.Err()
}

// categoryIDs checks the category ids: positive, no duplicates. The answer
// keeps the positions of the body (0 where an item failed), so that the
// service's existence check reports "categoryIds[i]" at the right i.
func categoryIDs(f *apierr.Fields, ids *[]int) ([]int, bool) {
	if ids == nil {
		f.Add("categoryIds", "required", "is required", nil)
		return nil, false
	}
	if !maxItems(f, "categoryIds", len(*ids), MaxCategories) {
		return nil, false
	}
	lf := f.At("categoryIds")
	out := make([]int, len(*ids))
	valid := true
	for i, id := range *ids {
		ok := true
		switch {
		case id < 1 || id > math.MaxInt32:
			lf.Index(i).Add("", "range", fmt.Sprintf("must be between 1 and %d", math.MaxInt32), map[string]any{"min": 1, "max": math.MaxInt32, "actual": id})
			ok = false
		case slices.Contains(out[:i], id):
			lf.Index(i).Add("", "duplicate", fmt.Sprintf("category %d is listed twice", id), map[string]any{"actual": id})
			ok = false
		default:
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

type locationBody struct {
	ThreeWordAddress string       `json:"threeWordAddress"`
	Address          *geo.Address `json:"address"`
	Coordinates      *struct {
		Lat *float64 `json:"lat"`
		Lon *float64 `json:"lon"`
	} `json:"coordinates"`
}

// location checks a location (nil when null): coordinates are required and
// in range, the address is optional with ISO-coded country and region.
func location(f *apierr.Fields, b *locationBody) *Location {
	if b == nil {
		return nil
	}
	loc := &Location{}
	loc.ThreeWordAddress, _ = str(f, "threeWordAddress", &b.ThreeWordAddress, false, MaxText)
	if a := b.Address; a != nil {
		af, ad := f.At("address"), &loc.Address
		for _, fld := range []struct {
			key string
			src *string
			dst *string
		}{{"name", &a.Name, &ad.Name}, {"line1", &a.Line1, &ad.Line1}, {"line2", &a.Line2, &ad.Line2}, {"line3", &a.Line3, &ad.Line3},
			{"city", &a.City, &ad.City}, {"region", &a.Region, &ad.Region}, {"postcode", &a.Postcode, &ad.Postcode},
			{"countryName", &a.CountryName, &ad.CountryName}} {
			*fld.dst, _ = str(af, fld.key, fld.src, false, MaxText)
		}
		if s, ok := str(af, "countryISO", &a.CountryISO, false, 2+MaxText); ok {
			s = strings.ToUpper(s)
			if af.Check(countryISO.MatchString(s), "countryISO", "format", "must be an ISO 3166-1 alpha-2 code, e.g. GB") {
				ad.CountryISO = s
			}
		}
		if s, ok := str(af, "regionISO", &a.RegionISO, false, MaxText); ok {
			s = strings.ToUpper(s)
			if af.Check(regionISO.MatchString(s), "regionISO", "format", "must be an ISO 3166-2 code, e.g. GB-NYK") {
				ad.RegionISO = s
			}
		}
	}
	if co := b.Coordinates; co == nil {
		f.Add("coordinates", "required", "is required", nil)
	} else {
		cf := f.At("coordinates")
		loc.Coordinates.Lat, _ = numberIn(cf, "lat", co.Lat, true, -90, 90)
		loc.Coordinates.Lon, _ = numberIn(cf, "lon", co.Lon, true, -180, 180)
	}
	return loc
}

type priceBody struct {
	Type         *string    `json:"type"`
	PricePerUnit *moneyBody `json:"pricePerUnit"`
	MinPrice     *moneyBody `json:"minPrice"`
	MaxPrice     *moneyBody `json:"maxPrice"`
}

type moneyBody struct {
	Amount   *float64 `json:"amount"`
	Currency *string  `json:"currency"`
}

// price checks the price object: every amount in the currency of
// pricePerUnit, and minPrice not above maxPrice. ok tells that nothing in it
// failed.
func price(f *apierr.Fields, b *priceBody) (*Price, bool) {
	if b == nil {
		f.Add("price", "required", "is required", nil)
		return nil, false
	}
	c := f.At("price")
	before := len(f.List())
	p := &Price{}
	p.Type, _ = enum(c, "type", b.Type, true, PriceTypes)
	if b.PricePerUnit == nil {
		c.Add("pricePerUnit", "required", "is required", nil)
	} else {
		p.PricePerUnit = *money(c.At("pricePerUnit"), b.PricePerUnit)
	}
	if b.MinPrice != nil {
		p.MinPrice = money(c.At("minPrice"), b.MinPrice)
	}
	if b.MaxPrice != nil {
		p.MaxPrice = money(c.At("maxPrice"), b.MaxPrice)
	}
	for _, m := range []struct {
		key string
		m   *Money
	}{{"minPrice", p.MinPrice}, {"maxPrice", p.MaxPrice}} {
		if m.m != nil && p.PricePerUnit.Currency != "" && m.m.Currency != "" && m.m.Currency != p.PricePerUnit.Currency {
			c.Add(m.key+".currency", "currency", "must be the currency of pricePerUnit ("+p.PricePerUnit.Currency+")",
				map[string]any{"expected": p.PricePerUnit.Currency, "actual": m.m.Currency})
		}
	}
	if p.MinPrice != nil && p.MaxPrice != nil && p.MinPrice.Amount > p.MaxPrice.Amount {
		c.Add("maxPrice.amount", "range", "must not be below minPrice.amount", map[string]any{"min": p.MinPrice.Amount, "actual": p.MaxPrice.Amount})
	}
	return p, len(f.List()) == before
}

// money checks an amount (0 up to MaxAmount) in an ISO 4217 currency.
func money(f *apierr.Fields, b *moneyBody) *Money {
	m := &Money{}
	m.Amount, _ = numberIn(f, "amount", b.Amount, true, 0, MaxAmount)
	if s, ok := str(f, "currency", b.Currency, true, 3); ok {
		s = strings.ToUpper(s)
		if f.Check(IsCurrency(s), "currency", "currency", "must be an ISO 4217 currency code, e.g. GBP") {
			m.Currency = s
		}
	}
	return m
}

// files checks the file references (null allowed): objects with an id.
// Blank, duplicate and unknown ids are filestore.Resolve's to report; the
// other members of a reference are the server's to fill.
func files(f *apierr.Fields, n httpx.Nullable[[]*filestore.Ref]) ([]filestore.Ref, bool) {
	if !n.Set {
		f.Add("files", "required", "is required", nil)
		return nil, true
	}
	if n.Value == nil {
		return nil, true
	}
	items := *n.Value
	if !maxItems(f, "files", len(items), MaxFiles) {
		return nil, false
	}
	refs := make([]filestore.Ref, 0, len(items))
	valid := true
	for i, it := range items {
		if it == nil {
			f.At("files").Index(i).Add("", "required", "is required", nil)
			valid = false
			continue
		}
		refs = append(refs, filestore.Ref{ID: it.ID})
	}
	return refs, valid
}

type sheepProperties struct {
	BreedType      *string  `json:"breedType"`
	BreedSociety   string   `json:"breedSociety"`
	Type           []string `json:"type"`
	AdditionalInfo []string `json:"additionalInfo"`
	Sexes          *string  `json:"sexes"`
	Health         *struct {
		Data string `json:"data"`
	} `json:"health"`
}

func (b *sheepProperties) check(f *apierr.Fields) Properties {
	p := &SheepProperties{}
	p.BreedType, _ = enum(f, "breedType", b.BreedType, true, categories.Values(categories.Sheep, categories.GroupBreed))
	p.BreedSociety, _ = str(f, "breedSociety", &b.BreedSociety, false, MaxText)
	p.Type = enums(f, "type", b.Type, categories.Values(categories.Sheep, categories.GroupType))
	p.AdditionalInfo = enums(f, "additionalInfo", b.AdditionalInfo, AddInfo)
	p.Sexes, _ = enum(f, "sexes", b.Sexes, true, Sexes)
	if h := b.Health; h != nil {
		p.Health = &SheepHealth{}
		p.Health.Data, _ = str(f.At("health"), "data", &h.Data, false, MaxNotes)
	}
	return p
}

type cattleProperties struct {
	Type           *string  `json:"type"`
	BreedType      *string  `json:"breedType"`
	BreedSociety   string   `json:"breedSociety"`
	AdditionalInfo []string `json:"additionalInfo"`
	Sexes          *string  `json:"sexes"`
	Quantity       *int     `json:"quantity"`
	SocietyNumber  string   `json:"societyNumber"`
	MinAge         *float64 `json:"minAge"`
	MaxAge         *float64 `json:"maxAge"`
	Health         *struct {
		TBStatus   *string `json:"tbStatus"`
		TBDetails  string  `json:"tbDetails"`
		TBInterval *string `json:"tbInterval"`
		Data       string  `json:"data"`
	} `json:"health"`
	Performance *struct {
		AverageWeight       *weightBody `json:"averageWeight"`
		DailyLiveWeightGain *weightBody `json:"dailyLiveWeightGain"`
	} `json:"performance"`
}

func (b *cattleProperties) check(f *apierr.Fields) Properties {
	p := &CattleProperties{}
	p.Type, _ = enum(f, "type", b.Type, false, categories.Values(categories.Cattle, categories.GroupType))
	p.BreedType, _ = enum(f, "breedType", b.BreedType, true, categories.Values(categories.Cattle, categories.GroupBreed))
	p.BreedSociety, _ = str(f, "breedSociety", &b.BreedSociety, false, MaxText)
	p.AdditionalInfo = enums(f, "additionalInfo", b.AdditionalInfo, AddInfo)
	p.Sexes, _ = enum(f, "sexes", b.Sexes, true, Sexes)
	if q := b.Quantity; q != nil {
		if *q < 1 || *q > MaxQuantity {
			f.Add("quantity", "range", fmt.Sprintf("must be between 1 and %d", MaxQuantity), map[string]any{"min": 1, "max": MaxQuantity, "actual": *q})
		} else {
			p.Quantity = q
		}
	}
	p.SocietyNumber, _ = str(f, "societyNumber", &b.SocietyNumber, false, 50)
	if a, ok := numberIn(f, "minAge", b.MinAge, false, 0, MaxAgeMonths); ok {
		p.MinAge = &a
	}
	if a, ok := numberIn(f, "maxAge", b.MaxAge, false, 0, MaxAgeMonths); ok {
		p.MaxAge = &a
	}
	if p.MinAge != nil && p.MaxAge != nil && *p.MinAge > *p.MaxAge {
		f.Add("maxAge", "range", "must not be below minAge", map[string]any{"min": *p.MinAge, "actual": *p.MaxAge})
	}
	if h := b.Health; h != nil {
		hf := f.At("health")
		p.Health = &CattleHealth{}
		p.Health.TBStatus, _ = enum(hf, "tbStatus", h.TBStatus, false, TBStatuses)
		p.Health.TBDetails, _ = str(hf, "tbDetails", &h.TBDetails, false, MaxNotes)
		p.Health.TBInterval, _ = enum(hf, "tbInterval", h.TBInterval, false, TBIntervals)
		p.Health.Data, _ = str(hf, "data", &h.Data, false, MaxNotes)
	}
	if perf := b.Performance; perf != nil {
		pf := f.At("performance")
		p.Performance = &CattlePerformance{
			AverageWeight:       weight(pf.At("averageWeight"), perf.AverageWeight, 5000),
			DailyLiveWeightGain: weight(pf.At("dailyLiveWeightGain"), perf.DailyLiveWeightGain, 10),
		}
	}
	return p
}

type weightBody struct {
	Name       *string  `json:"name"`
	Conversion *float64 `json:"conversion"`
	Weight     *float64 `json:"weight"`
}

// weightUnits are the units of WeightUnits, sorted (the enum's message).
var weightUnits = func() []string {
	units := make([]string, 0, len(WeightUnits))
	for u := range WeightUnits {
		units = append(units, u)
	}
	slices.Sort(units)
	return units
}()

// weight checks a weight object (nil when null); max bounds the weight in
// kilograms. A missing conversion is filled from the unit.
func weight(f *apierr.Fields, b *weightBody, maxKg float64) *Weight {
	if b == nil {
		return nil
	}
	w := &Weight{}
	w.Name, _ = enum(f, "name", b.Name, true, weightUnits)
	if conv := b.Conversion; conv != nil {
		if f.Check(*conv > 0, "conversion", "range", "must be greater than 0") {
			w.Conversion = *conv
		}
	} else if w.Name != "" {
		w.Conversion = WeightUnits[w.Name]
	}
	if w.Name != "" {
		w.Weight, _ = numberIn(f, "weight", b.Weight, true, 0, maxKg/WeightUnits[w.Name])
	} else {
		w.Weight, _ = numberIn(f, "weight", b.Weight, true, math.Inf(-1), math.Inf(1))
	}
	return w
}

type dogProperties struct {
	BreedType    *string `json:"breedType"`
	BreedSociety string  `json:"breedSociety"`
	Sex          *string `json:"sex"`
	Registration *struct {
		DateOfBirth        string `json:"dateOfBirth"`
		IsRegistered       *bool  `json:"isRegistered"`
		RegistrationNumber string `json:"registrationNumber"`
		Name               string `json:"name"`
	} `json:"registration"`
}

func (b *dogProperties) check(f *apierr.Fields) Properties {
	p := &DogProperties{}
	p.BreedType, _ = enum(f, "breedType", b.BreedType, true, categories.Values(categories.WorkingDog, categories.GroupBreed))
	p.BreedSociety, _ = str(f, "breedSociety", &b.BreedSociety, false, MaxText)
	p.Sex, _ = enum(f, "sex", b.Sex, true, DogSexes)
	if r := b.Registration; r != nil {
		rf := f.At("registration")
		reg := &DogRegistration{}
		if s, ok := str(rf, "dateOfBirth", &r.DateOfBirth, false, 40); ok {
			t, _, err := httpx.ParseDate(s)
			now := time.Now().UTC()
			switch {
			case err != nil:
				rf.Add("dateOfBirth", "format", "must be a date (YYYY-MM-DD)", map[string]any{"actual": s})
			case t.After(now) || t.Year() < earliestDogYear:
				rf.Add("dateOfBirth", "range", fmt.Sprintf("must be between %d-01-01 and today", earliestDogYear), map[string]any{"actual": s})
			default:
				reg.DateOfBirth = t.Format(dateFormat)
			}
		}
		reg.IsRegistered = r.IsRegistered != nil && *r.IsRegistered
		reg.RegistrationNumber, _ = str(rf, "registrationNumber", &r.RegistrationNumber, false, 50)
		if reg.IsRegistered && strings.TrimSpace(r.RegistrationNumber) == "" {
			rf.Add("registrationNumber", "required", "is required when isRegistered is true", nil)
		}
		reg.Name, _ = str(rf, "name", &r.Name, false, MaxText)
		p.Registration = reg
	}
	return p
}
