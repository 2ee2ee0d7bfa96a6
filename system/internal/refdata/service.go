package refdata

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/cache"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/logging"
	"github.com/agritrade/api/platform/tabular"
	"github.com/sirupsen/logrus"
)

// CachePrefix starts every cache key of this feature; POST /system/v1/cache
// with this prefix drops them all.
const CachePrefix = "refdata:"

// Cache keys of the representations (a country code follows the colon).
const (
	keySettings    = CachePrefix + "settings:"
	keyCountries   = CachePrefix + "countries"
	keyRegions     = CachePrefix + "regions:"
	keyCommodities = CachePrefix + "commodities:"
	keyAll         = "all"
)

// ImportColumns are the columns of a variety import, in their usual order.
var ImportColumns = []string{"commodityId", "type", "grade", "variety"}

// MaxImportRows caps the data rows of a variety import.
const MaxImportRows = 50000

// MaxImportCellBytes caps a cell of a variety import (a variety is at most
// MaxVarietyLen characters; types and grades are shorter), and
// MaxImportTextBytes the text of the whole file, which the import keeps until
// it writes: together with the row limit they bound its memory.
const (
	MaxImportCellBytes = 1024
	MaxImportTextBytes = 16 << 20
)

var countryCode = regexp.MustCompile(`^[A-Za-z]{2}$`)

// Service serves the reference data from the cache, building representations
// from the database on a miss.
type Service struct {
	store *Store
	cache cache.Cache
	log   logrus.FieldLogger
	now   func() time.Time
}

// NewService makes the service.
func NewService(store *Store, c cache.Cache, log logrus.FieldLogger) *Service {
	return &Service{store: store, cache: c, log: log, now: time.Now}
}

// Representation is an encoded answer with its entity tag; Count is the number
// of items of a list answer.
type Representation struct {
	Body []byte
	// Gzip is Body compressed once when it was built (nil when that does
	// not pay), for clients that accept gzip.
	Gzip  []byte
	ETag  string
	Count int
}

// cachedRep is how a representation (or a known "not found") sits in the
// cache: a few header lines, then the body as it goes on the wire and its gzip
// form, so that a hit costs no decoding of the document and no compression.
type cachedRep struct {
	ETag     string
	Count    int
	NotFound string
	Body     []byte
	Gzip     []byte
}

// repMagic starts every cached representation (and versions the layout:
// entries of another layout are built again).
const repMagic = "rep2"

func (r cachedRep) encode() []byte {
	notFound := strings.ReplaceAll(r.NotFound, "\n", " ")
	head := repMagic + "\n" + r.ETag + "\n" + strconv.Itoa(r.Count) + "\n" + notFound + "\n" + strconv.Itoa(len(r.Body)) + "\n"
	out := make([]byte, 0, len(head)+len(r.Body)+len(r.Gzip))
	return append(append(append(out, head...), r.Body...), r.Gzip...)
}

func decodeRep(b []byte) (cachedRep, bool) {
	var fields [5][]byte
	for i := range fields {
		j := bytes.IndexByte(b, '\n')
		if j < 0 {
			return cachedRep{}, false
		}
		fields[i], b = b[:j], b[j+1:]
	}
	count, err := strconv.Atoi(string(fields[2]))
	n, nerr := strconv.Atoi(string(fields[4]))
	if string(fields[0]) != repMagic || err != nil || nerr != nil || n < 0 || n > len(b) {
		return cachedRep{}, false
	}
	cr := cachedRep{ETag: string(fields[1]), Count: count, NotFound: string(fields[3]), Body: b[:n:n]}
	if len(b) > n {
		cr.Gzip = b[n:]
	}
	return cr, true
}

// Seed writes the committed reference data when the database holds another
// version (or none), and drops the cached representations of the old one.
func (s *Service) Seed(ctx context.Context) error {
	d, err := LoadDataset()
	if err != nil {
		return fmt.Errorf("reference data files: %w", err)
	}
	v, err := s.store.DataVersion(ctx)
	if err != nil {
		return fmt.Errorf("read reference data version: %w", err)
	}
	if v == d.Version {
		return nil
	}
	start := s.now()
	seeded, err := s.store.Seed(ctx, d)
	if err != nil {
		return fmt.Errorf("seed reference data: %w", err)
	}
	if seeded {
		s.log.WithField("version", d.Version[:12]).WithField("duration", s.now().Sub(start).String()).Info("reference data seeded")
		s.invalidate(ctx)
	}
	return nil
}

// Settings answers the settings document, of every country or of one
// (case-insensitive code; unknown or disabled: 404).
func (s *Service) Settings(ctx context.Context, country string) (Representation, error) {
	if country == "" {
		return s.cached(ctx, keySettings+keyAll, func(c *Catalogue) (any, int, error) {
			return buildSettings(c, ""), 0, nil
		})
	}
	if !countryCode.MatchString(country) {
		return Representation{}, apierr.NotFound("country")
	}
	iso := strings.ToUpper(country)
	return s.cached(ctx, keySettings+iso, func(c *Catalogue) (any, int, error) {
		found, enabled := countryState(c, iso)
		if !found || !enabled {
			return nil, 0, apierr.New(apierr.CodeNotFound, "country %s not found or not enabled", iso)
		}
		return buildSettings(c, iso), 0, nil
	})
}

// Countries answers every country keyed by code, enabled as a string.
func (s *Service) Countries(ctx context.Context) (Representation, error) {
	return s.cached(ctx, keyCountries, func(c *Catalogue) (any, int, error) {
		out := make(map[string]ListedCountry, len(c.Countries))
		for _, co := range c.Countries {
			out[co.ISO] = co.Listed()
		}
		return out, len(out), nil
	})
}

// Regions answers the region list, optionally of one country.
func (s *Service) Regions(ctx context.Context, countryISO string) (Representation, error) {
	iso, key, err := listFilter(countryISO, keyRegions)
	if err != nil {
		return Representation{}, err
	}
	return s.cached(ctx, key, func(c *Catalogue) (any, int, error) {
		if found, _ := countryState(c, iso); iso != "" && !found {
			return nil, 0, apierr.New(apierr.CodeNotFound, "country %s not found", iso)
		}
		list := RegionList{ID: keyAll, Regions: []Region{}}
		if iso != "" {
			list.ID = iso
		}
		for _, r := range c.Regions {
			if iso == "" || r.Country == iso {
				list.Regions = append(list.Regions, r)
			}
		}
		return list, len(list.Regions), nil
	})
}

// Commodities answers the commodity groups, optionally of one country.
func (s *Service) Commodities(ctx context.Context, countryISO string) (Representation, error) {
	iso, key, err := listFilter(countryISO, keyCommodities)
	if err != nil {
		return Representation{}, err
	}
	return s.cached(ctx, key, func(c *Catalogue) (any, int, error) {
		if found, _ := countryState(c, iso); iso != "" && !found {
			return nil, 0, apierr.New(apierr.CodeNotFound, "country %s not found", iso)
		}
		out := commoditiesOf(c, iso)
		return out, len(out), nil
	})
}

// listFilter validates an optional countryISO filter and names the cache key.
func listFilter(countryISO, prefix string) (iso, key string, err error) {
	if countryISO == "" {
		return "", prefix + keyAll, nil
	}
	if !countryCode.MatchString(countryISO) {
		var f apierr.Fields
		f.Add("countryISO", "format", "must be an ISO 3166-1 alpha-2 code such as GB", map[string]any{"actual": countryISO})
		return "", "", f.Err()
	}
	iso = strings.ToUpper(countryISO)
	return iso, prefix + iso, nil
}

// cached returns the representation under key, building, encoding and storing
// it on a miss. A cache that fails is logged and bypassed: the database still
// answers. Not-found answers are cached too, so unknown codes cost no queries.
func (s *Service) cached(ctx context.Context, key string, build func(*Catalogue) (any, int, error)) (Representation, error) {
	raw, ok, err := s.cache.Get(ctx, key)
	if err != nil {
		logging.Ctx(ctx, s.log).WithError(err).WithField("key", key).Warn("cache read failed; answering from the database")
	}
	if ok {
		if cr, ok := decodeRep(raw); ok {
			if cr.NotFound != "" {
				return Representation{}, apierr.New(apierr.CodeNotFound, "%s", cr.NotFound)
			}
			return Representation{Body: cr.Body, Gzip: cr.Gzip, ETag: cr.ETag, Count: cr.Count}, nil
		}
	}
	cat, err := s.store.LoadCatalogue(ctx)
	if err != nil {
		return Representation{}, err
	}
	v, count, berr := build(cat)
	var cr cachedRep
	if berr != nil {
		ae, isAPI := apierr.As(berr)
		if !isAPI || ae.Code != apierr.CodeNotFound {
			return Representation{}, berr
		}
		cr.NotFound = ae.Message
	} else {
		body, err := json.Marshal(v)
		if err != nil {
			return Representation{}, apierr.Internal(err)
		}
		cr = cachedRep{Body: body, Gzip: httpx.Gzip(body), ETag: httpx.StrongETag(body), Count: count}
	}
	if err := s.cache.Set(ctx, key, cr.encode(), 0); err != nil {
		logging.Ctx(ctx, s.log).WithError(err).WithField("key", key).Warn("cache write failed")
	}
	logging.Ctx(ctx, s.log).WithFields(logrus.Fields{"key": key, "bytes": len(cr.Body), "count": cr.Count, "notFound": cr.NotFound != ""}).Debug("reference data built and cached (cache miss)")
	if berr != nil {
		return Representation{}, berr
	}
	return Representation{Body: cr.Body, Gzip: cr.Gzip, ETag: cr.ETag, Count: cr.Count}, nil
}

func (s *Service) invalidate(ctx context.Context) {
	if _, err := s.cache.DeletePrefix(ctx, CachePrefix); err != nil {
		logging.Ctx(ctx, s.log).WithError(err).Warn("could not clear cached reference data")
	}
}

func countryState(c *Catalogue, iso string) (found, enabled bool) {
	for _, co := range c.Countries {
		if co.ISO == iso {
			return true, co.Enabled
		}
	}
	return false, false
}

func commoditiesOf(c *Catalogue, iso string) []Commodity {
	out := []Commodity{}
	for _, g := range c.Commodities {
		if iso == "" || g.CountryISO == iso {
			out = append(out, g)
		}
	}
	return out
}

// buildSettings assembles the settings document, of one country when iso is
// set: its commodities, regions and ex-farm price commodities, and itself as
// the only country.
func buildSettings(c *Catalogue, iso string) Settings {
	doc := Settings{
		Commodities:       commoditiesOf(c, iso),
		SellerCommodities: c.SellerCommodities,
		Trading:           c.Trading,
		Conversions:       c.Conversions,
		Countries:         map[string]Country{},
		Regions:           []SettingsRegion{},
	}
	if doc.SellerCommodities == nil {
		doc.SellerCommodities = []SellerCommodity{}
	}
	for _, co := range c.Countries {
		if iso == "" || co.ISO == iso {
			doc.Countries[co.ISO] = co
		}
	}
	var regions []Region
	for _, r := range c.Regions {
		if iso == "" || r.Country == iso {
			regions = append(regions, r)
			doc.Regions = append(doc.Regions, SettingsRegion{ISO: r.ISO, Name: r.Name, Group: r.Group, Country: r.Country})
		}
	}
	doc.RegionGroups = regionGroups(regions)
	if iso != "" {
		items := map[int]bool{}
		for _, g := range doc.Commodities {
			for _, it := range g.Items {
				items[it.ID] = true
			}
		}
		ex := []ExFarmPriceCommodity{}
		for _, e := range c.Trading.ExFarmPriceCommodities {
			if items[e.CommodityID] {
				ex = append(ex, e)
			}
		}
		doc.Trading.ExFarmPriceCommodities = ex
	}
	return doc
}

// Specification answers the default specification of a commodity item for a
// type and grade, each given by id or name (default: the first type, and the
// first grade of the type). Unknown commodity, type or grade: 404.
func (s *Service) Specification(ctx context.Context, id, typ, grade string) (*Specification, error) {
	itemID, err := strconv.Atoi(strings.TrimSpace(id))
	if err != nil || itemID <= 0 {
		var f apierr.Fields
		f.Add("id", "type", "must be a commodity id (a positive integer)", map[string]any{"actual": id})
		return nil, f.Err()
	}
	item, err := s.store.ItemTree(ctx, itemID)
	if err != nil {
		return nil, err
	}
	if item == nil || len(item.Types) == 0 {
		return nil, apierr.New(apierr.CodeNotFound, "commodity %d not found", itemID)
	}
	var (
		t *CommodityType
		g *Grade
	)
	switch {
	case typ != "":
		for i := range item.Types {
			if matches(item.Types[i].ID, item.Types[i].Name, typ) {
				t = &item.Types[i]
				break
			}
		}
		if t == nil {
			return nil, apierr.New(apierr.CodeNotFound, "commodity type %q of %s not found", typ, item.Name)
		}
		if grade == "" {
			g = firstGrade(t)
		} else {
			g = findGrade(t.Grades, grade)
		}
	case grade != "":
		// No type given: the grade tells which type it belongs to.
		for i := range item.Types {
			if g = findGrade(item.Types[i].Grades, grade); g != nil {
				t = &item.Types[i]
				break
			}
		}
	default:
		t = &item.Types[0]
		g = firstGrade(t)
	}
	if g == nil {
		return nil, apierr.New(apierr.CodeNotFound, "commodity grade %q of %s not found", grade, item.Name)
	}
	measures, err := s.store.Measures(ctx, g.ID)
	if err != nil {
		return nil, err
	}
	return &Specification{
		Commodity: SpecCommodity{ID: item.ID, Name: item.Name, Type: IDName{ID: t.ID, Name: t.Name}, Grade: IDName{ID: g.ID, Name: g.Name}},
		Measures:  measures,
	}, nil
}

func firstGrade(t *CommodityType) *Grade {
	if len(t.Grades) == 0 {
		return nil
	}
	return &t.Grades[0]
}

func findGrade(grades []Grade, q string) *Grade {
	for i := range grades {
		if matches(grades[i].ID, grades[i].Name, q) {
			return &grades[i]
		}
	}
	return nil
}

// matches compares a query with an id (as digits) or a name (any case).
func matches(id int, name, q string) bool {
	q = strings.TrimSpace(q)
	return q == strconv.Itoa(id) || strings.EqualFold(q, name)
}

// LookupCommodity returns a commodity item's name and default weight unit.
func (s *Service) LookupCommodity(ctx context.Context, id int) (name, unitName string, conversion float64, found bool, err error) {
	u, found, err := s.store.ItemUnit(ctx, id)
	if err != nil || !found {
		return "", "", 0, false, err
	}
	return u.Name, u.Weight.Name, u.Weight.Conversion, true, nil
}

// ImportVarieties reads every row of r, validates it, and for each
// (commodity, type, grade) named by a valid row makes its variety list exactly
// the file's list, in one transaction. Every row gets a result; invalid rows
// change nothing. A file without the needed columns changes nothing at all.
func (s *Service) ImportVarieties(ctx context.Context, p *auth.Principal, r tabular.Reader) (*tabular.Result, error) {
	cols, err := tabular.Columns(r.Header(), ImportColumns)
	if err != nil {
		return nil, err
	}
	type pending struct {
		row      VarietyRow
		problems []string
	}
	var rows []pending
	itemSet := map[int]bool{}
	for {
		cells, line, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err // a broken file: nothing has been written yet
		}
		cell := func(name string) string { return tabular.Cell(cells, cols[name]) }
		row, problems := NewVarietyRow(line, cell("commodityId"), cell("type"), cell("grade"), cell("variety"))
		if row.CommodityID > 0 {
			itemSet[row.CommodityID] = true
		}
		rows = append(rows, pending{row, problems})
	}
	ids := make([]int, 0, len(itemSet))
	for id := range itemSet {
		ids = append(ids, id)
	}
	grades, items, err := s.store.GradeIndex(ctx, ids)
	if err != nil {
		return nil, err
	}
	lists := map[int][]string{}
	seen := map[int]map[string]int{} // grade → lower-case variety → first line
	refs := make([]GradeRef, len(rows))
	for i := range rows {
		pr := &rows[i]
		if len(pr.problems) > 0 {
			continue
		}
		ref, ok := grades[pr.row.KeyOf()]
		switch {
		case !items[pr.row.CommodityID]:
			pr.problems = append(pr.problems, fmt.Sprintf("commodity %d not found", pr.row.CommodityID))
		case !ok:
			pr.problems = append(pr.problems, fmt.Sprintf("commodity %d has no type %q with a grade %q", pr.row.CommodityID, pr.row.Type, pr.row.Grade))
		default:
			refs[i] = ref
			if seen[ref.GradeID] == nil {
				seen[ref.GradeID] = map[string]int{}
				lists[ref.GradeID] = []string{}
			}
			k := strings.ToLower(pr.row.Variety)
			if _, dup := seen[ref.GradeID][k]; !dup {
				seen[ref.GradeID][k] = pr.row.Line
				lists[ref.GradeID] = append(lists[ref.GradeID], pr.row.Variety)
			}
		}
	}
	by := ""
	if p != nil {
		by = p.UserID
	}
	if err := s.store.ReplaceVarieties(ctx, lists, by, s.now()); err != nil {
		return nil, err
	}
	if len(lists) > 0 {
		s.invalidate(ctx)
	}
	res := tabular.NewResult()
	for i, pr := range rows {
		rr := tabular.RowResult{Rows: tabular.Line(pr.row.Line), Reference: pr.row.Reference()}
		if len(pr.problems) > 0 {
			rr.Status, rr.Message = tabular.StatusValidation, pr.problems
			rr.Summary = "not imported: " + strings.Join(pr.problems, "; ")
			res.Add(rr)
			continue
		}
		ref := refs[i]
		rr.Status, rr.ID = tabular.StatusSuccess, strconv.Itoa(ref.GradeID)
		rr.Reference = fmt.Sprintf("%d/%s/%s", pr.row.CommodityID, ref.TypeName, ref.GradeName)
		rr.Summary = fmt.Sprintf("%s (%s), %s %s: %s", ref.ItemName, ref.Country, ref.TypeName, ref.GradeName, pr.row.Variety)
		if first := seen[ref.GradeID][strings.ToLower(pr.row.Variety)]; first != pr.row.Line {
			rr.Message = []string{fmt.Sprintf("repeats the variety of line %d: listed once", first)}
		}
		res.Add(rr)
	}
	return res, nil
}
