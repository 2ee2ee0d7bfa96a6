package listings_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// known is what the test knows of a listing it created: the brute-force side
// of every search comparison.
type known struct {
	id             string
	seq            int
	org            string
	kind, typ      string
	status         string
	lat, lon       *float64
	amount         float64
	breed, society string
	sexes          string
	info           []string
	minAge, maxAge *float64
	hidden         bool
	wishedBy       map[string]bool
}

// greatCircleKm is the test's own great-circle distance (the atan2 form of the
// haversine formula on the same sphere), to check the server's figures.
func greatCircleKm(lat1, lon1, lat2, lon2 float64) float64 {
	const r = 6371.0088
	p1, p2 := lat1*math.Pi/180, lat2*math.Pi/180
	dp, dl := (lat2-lat1)*math.Pi/180, (lon2-lon1)*math.Pi/180
	a := math.Sin(dp/2)*math.Sin(dp/2) + math.Cos(p1)*math.Cos(p2)*math.Sin(dl/2)*math.Sin(dl/2)
	return r * 2 * math.Atan2(math.Sqrt(a), math.Sqrt(1-a))
}

// fixture creates a random but reproducible marketplace through the API:
// every kind and type, drafts, closed listings, listings without location,
// wishlists and one listing hidden by reports.
func fixture(t *testing.T, s *testkit.Server, n int) []*known {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 11))
	owners := []auth.Principal{farmer, outsider, trader}
	breeds := map[string][]string{"sheep": {"texel", "suffolk", "cross", "mule"}, "cattle": {"limousin", "aberdeen-angus", "cross"}, "working-dog": {"border-collie", "kelpie", "cross"}}
	societies := []string{"", "", "Texel Sheep Society", "NSA", "ISDS"}
	infos := []string{"crossbred", "in-lamb", "pedigree", "organic", "in-calf", "named-sire"}
	sexes := []string{"ewes", "rams", "lambs", "shearlings", "heifers", "steers", "bulls", "cows"}
	cats := map[string][]int{"sheep": {1}, "cattle": {2}, "working-dog": {3}, "feed": {4}, "bedding": {5}}
	var out []*known
	for i := 0; i < n; i++ {
		owner := owners[rng.IntN(len(owners))]
		k := &known{seq: i, org: owner.OrgID, kind: kinds[rng.IntN(len(kinds))], typ: []string{"selling", "buying"}[rng.IntN(2)],
			amount: float64(rng.IntN(500000))/100 + float64(i)/1000, wishedBy: map[string]bool{}}
		body := validBody(k.kind)
		body["type"], body["categoryIds"] = k.typ, cats[k.kind]
		body["price"] = price(k.amount)
		body["description"] = fmt.Sprintf("Listing %d", i)
		if i%17 == 0 {
			body["description"] = "=HYPERLINK(\"http://evil\")"
		}
		if rng.IntN(8) == 0 {
			body["location"] = nil
		} else {
			lat, lon := 50+rng.Float64()*8.5, -8+rng.Float64()*9.5
			k.lat, k.lon = &lat, &lon
			body["location"] = location("Somewhere", "AB1 2CD", lat, lon)
		}
		if bs, ok := breeds[k.kind]; ok {
			k.breed = bs[rng.IntN(len(bs))]
			k.society = societies[rng.IntN(len(societies))]
			props := map[string]any{"breedType": k.breed}
			if k.society != "" {
				props["breedSociety"] = k.society
			}
			if k.kind == "working-dog" {
				props["sex"] = "male"
			} else {
				k.sexes = sexes[rng.IntN(len(sexes))]
				props["sexes"] = k.sexes
				for _, in := range infos {
					if rng.IntN(4) == 0 {
						k.info = append(k.info, in)
					}
				}
				props["additionalInfo"] = k.info
			}
			if k.kind == "cattle" {
				switch rng.IntN(4) {
				case 0:
					lo, hi := float64(rng.IntN(24)), float64(24+rng.IntN(24))
					k.minAge, k.maxAge = &lo, &hi
					props["minAge"], props["maxAge"] = lo, hi
				case 1:
					a := float64(rng.IntN(40))
					k.minAge, k.maxAge = &a, &a
					props["minAge"] = a
				case 2:
					a := float64(rng.IntN(40))
					k.minAge, k.maxAge = &a, &a
					props["maxAge"] = a
				}
			}
			body["properties"] = props
		}
		draft := rng.IntN(10) == 0
		body["isDraft"] = draft
		k.status = "active"
		if draft {
			k.status = "draft"
		}
		k.id = create(t, s, owner, k.kind, body)
		if !draft && rng.IntN(6) == 0 {
			k.status = map[string]string{"selling": "sold", "buying": "found"}[k.typ]
			if rng.IntN(3) == 0 {
				k.status = "cancelled"
			}
			r := s.Do(testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/listings/" + k.id + "/close", Token: s.Token(owner), JSON: map[string]any{"status": k.status}})
			if r.Status != http.StatusOK {
				t.Fatalf("close: %d %s", r.Status, r.Body)
			}
		}
		out = append(out, k)
	}
	// Wishlists of the outsider and the farmer.
	for _, k := range out {
		for _, p := range []auth.Principal{outsider, farmer} {
			if k.status == "active" && rng.IntN(5) == 0 {
				if r := s.Do(testkit.Request{Method: http.MethodPut, Path: "/livestock/v1/listings/" + k.id + "/wishlist", Token: s.Token(p)}); r.Status != http.StatusOK {
					t.Fatalf("wishlist: %d %s", r.Status, r.Body)
				}
				k.wishedBy[p.UserID] = true
			}
		}
	}
	// One active listing of the farmer reported by three others: hidden.
	for _, k := range out {
		if k.status == "active" && k.org == farmer.OrgID && k.lat != nil {
			for _, p := range []auth.Principal{outsider, trader, dealer} {
				r := s.Do(testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/listings/" + k.id + "/report", Token: s.Token(p), JSON: map[string]any{"reason": "suspicious", "message": nil}})
				if r.Status != http.StatusOK {
					t.Fatalf("report: %d %s", r.Status, r.Body)
				}
			}
			k.hidden = true
			break
		}
	}
	return out
}

// query is a search as the brute force reads it.
type query struct {
	status, kind   string
	breeds, socs   []string
	sexes, info    string
	minAge, maxAge *float64
	wished         bool
	lat, lon, km   *float64
	sortBy         string
	desc           bool
	limit, offset  int
	viewer         auth.Principal
	values         url.Values
}

// parseQuery turns query values into the brute-force query.
func parseQuery(t *testing.T, viewer auth.Principal, raw string) query {
	t.Helper()
	v, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := query{viewer: viewer, values: v, limit: 20, status: v.Get("f:status"), kind: v.Get("f:commodityType"),
		sexes: v.Get("f:commoditySexes"), info: v.Get("f:commodityAdditionalInfo"), wished: v.Get("isWishlisted") == "true", sortBy: v.Get("sortBy")}
	split := func(name string) []string {
		var out []string
		for _, x := range v[name] {
			out = append(out, strings.Split(x, ",")...)
		}
		return out
	}
	q.breeds, q.socs = split("f:commodityBreed"), split("f:commodityBreedSociety")
	for i, b := range q.breeds {
		q.breeds[i] = strings.ToLower(b) // breeds match whatever the case
	}
	num := func(name string) *float64 {
		if s := v.Get(name); s != "" {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatal(err)
			}
			return &f
		}
		return nil
	}
	q.minAge, q.maxAge, q.lat, q.lon, q.km = num("minAge"), num("maxAge"), num("latitude"), num("longitude"), num("distanceKm")
	if l := num("limit"); l != nil {
		q.limit = int(*l)
	}
	if o := num("offset"); o != nil {
		q.offset = int(*o)
	}
	q.desc = v.Get("sortDesc") == "true"
	if q.sortBy == "distance" {
		q.sortBy = "distanceKm"
	}
	if q.sortBy == "" {
		if q.lat != nil {
			q.sortBy = "distanceKm"
		} else {
			q.sortBy, q.desc = "createdAtUTC", v.Get("sortDesc") != "false"
		}
	}
	return q
}

func member(p auth.Principal, org string) bool { return slices.Contains(p.Organisations(), org) }

// matches tells whether k matches q, leaving out the filter named skip.
func (q query) matches(k *known, skip string) bool {
	if k.hidden {
		return false
	}
	statusOK := false
	switch {
	case skip == "status":
		statusOK = k.status == "active" || ((k.status == "sold" || k.status == "found") && member(q.viewer, k.org))
	case q.status == "":
		statusOK = k.status == "active"
	case q.status == "active-selling" || q.status == "active-buying":
		statusOK = k.status == "active" && "active-"+k.typ == q.status
	default:
		statusOK = k.status == q.status && member(q.viewer, k.org)
	}
	if !statusOK {
		return false
	}
	if skip != "commodityType" && q.kind != "" && k.kind != q.kind {
		return false
	}
	if skip != "commodityBreed" && len(q.breeds) > 0 && !slices.Contains(q.breeds, k.breed) {
		return false
	}
	if skip != "commodityBreedSociety" && len(q.socs) > 0 && !slices.Contains(q.socs, k.society) {
		return false
	}
	if skip != "commoditySexes" && q.sexes != "" && k.sexes != q.sexes {
		return false
	}
	if skip != "commodityAdditionalInfo" && q.info != "" && !slices.Contains(k.info, q.info) {
		return false
	}
	if q.minAge != nil && (k.maxAge == nil || *k.maxAge < *q.minAge) {
		return false
	}
	if q.maxAge != nil && (k.minAge == nil || *k.minAge > *q.maxAge) {
		return false
	}
	if q.wished && !k.wishedBy[q.viewer.UserID] {
		return false
	}
	if q.lat != nil && (k.lat == nil || greatCircleKm(*q.lat, *q.lon, *k.lat, *k.lon) > *q.km) {
		return false
	}
	return true
}

// expect answers the brute-force result of q: every match in the search's order.
func (q query) expect(all []*known) []*known {
	var out []*known
	for _, k := range all {
		if q.matches(k, "") {
			out = append(out, k)
		}
	}
	key := func(k *known) float64 {
		switch q.sortBy {
		case "price":
			return k.amount
		case "distanceKm":
			return greatCircleKm(*q.lat, *q.lon, *k.lat, *k.lon)
		default:
			return float64(k.seq)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if q.desc {
			return key(out[i]) > key(out[j])
		}
		return key(out[i]) < key(out[j])
	})
	return out
}

// facets answers the brute-force facet counts of q.
func (q query) facets(all []*known) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, name := range []string{"status", "commodityType", "commodityBreed", "commodityBreedSociety", "commoditySexes", "commodityAdditionalInfo"} {
		counts := map[string]int{}
		for _, k := range all {
			if !q.matches(k, name) {
				continue
			}
			var values []string
			switch name {
			case "status":
				if k.status == "active" {
					values = []string{"active-" + k.typ}
				} else {
					values = []string{k.status}
				}
			case "commodityType":
				values = []string{k.kind}
			case "commodityBreed":
				values = []string{k.breed}
			case "commodityBreedSociety":
				values = []string{k.society}
			case "commoditySexes":
				values = []string{k.sexes}
			case "commodityAdditionalInfo":
				values = k.info
			}
			for _, v := range values {
				if v != "" {
					counts[v]++
				}
			}
		}
		out[name] = counts
	}
	return out
}

var searchQueries = []string{
	"",
	"f:status=active-selling", "f:status=active-buying", "f:status=sold", "f:status=found",
	"f:commodityType=sheep", "f:commodityType=cattle", "f:commodityType=working-dog", "f:commodityType=feed", "f:commodityType=bedding",
	"f:commodityBreed=texel", "f:commodityBreed=texel,limousin", "f:commodityBreed=cross&f:commodityBreed=kelpie", "f:commodityBreed=TEXEL",
	"f:commodityBreedSociety=NSA", "f:commodityBreedSociety=NSA,ISDS",
	"f:commoditySexes=ewes", "f:commoditySexes=steers",
	"f:commodityAdditionalInfo=organic", "f:commodityAdditionalInfo=in-calf",
	"minAge=12", "maxAge=10", "minAge=6&maxAge=20", "minAge=30&maxAge=30",
	"isWishlisted=true",
	"latitude=53.96&longitude=-1.08&distanceKm=150",
	"latitude=53.35&longitude=-6.26&distanceKm=220",
	"latitude=52&longitude=-2&distanceKm=0.001",
	"latitude=53.96&longitude=-1.08&distanceKm=250&sortBy=distanceKm&sortDesc=true",
	"latitude=53.96&longitude=-1.08&distanceKm=250&sortBy=distance",
	"latitude=53.96&longitude=-1.08&distanceKm=300&sortBy=createdAtUTC&sortDesc=true&f:commodityType=sheep",
	"latitude=55&longitude=-3&distanceKm=5000&limit=100",
	"sortBy=price", "sortBy=price&sortDesc=true&limit=7&offset=2", "sortDesc=false", "limit=5&offset=3", "limit=100&offset=1000",
	"f:status=active-selling&f:commodityType=sheep&f:commodityBreed=texel,mule&f:commoditySexes=ewes",
	"f:status=active-buying&f:commodityType=cattle&minAge=10&f:commodityAdditionalInfo=organic",
	"f:status=sold&f:commodityType=sheep&latitude=54&longitude=-2&distanceKm=400",
	"f:commodityType=sheep&f:status=active-selling&latitude=53.5&longitude=-2.2&distanceKm=50&sortBy=createdAtUTC&sortDesc=true&limit=20",
	"f:commodityType=sheep&f:status=active-selling&latitude=53.5&longitude=-2.2&distanceKm=250&sortBy=createdAtUTC&sortDesc=true&limit=20",
	"isWishlisted=true&f:commodityType=cattle&latitude=54&longitude=-4&distanceKm=600",
	// Boxes across the antimeridian (few bands, then many) and around a pole:
	// the longitude-band prefilter must neither fail nor lose a match.
	"latitude=54&longitude=-179.8&distanceKm=100",
	"latitude=-10&longitude=179.9&distanceKm=3000",
	"latitude=89.9&longitude=10&distanceKm=4500&f:commodityType=sheep",
	// Pages past the last match still count the matches (the count rides on
	// the page's rows, so an empty page counts apart).
	"f:commodityType=sheep&latitude=53.5&longitude=-2.2&distanceKm=250&limit=3&offset=200",
	"f:commodityType=sheep&latitude=53.5&longitude=-2.2&distanceKm=250&limit=3&offset=4",
}

func TestSearchAgainstBruteForce(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		all := fixture(t, s, 160)
		// A point on a listing: a tiny radius finds it at distance 0.
		queries := slices.Clone(searchQueries)
		for _, k := range all {
			if k.status == "active" && k.lat != nil && !k.hidden {
				queries = append(queries, fmt.Sprintf("latitude=%v&longitude=%v&distanceKm=0.0001", *k.lat, *k.lon))
				break
			}
		}
		for _, viewer := range []auth.Principal{outsider, farmer} {
			for _, raw := range queries {
				t.Run(viewer.UserID+"/"+raw, func(t *testing.T) {
					q := parseQuery(t, viewer, raw)
					want := q.expect(all)
					got, total := search(t, s, viewer, q.values)
					if total != len(want) {
						t.Fatalf("X-Total-Count %d, brute force %d", total, len(want))
					}
					page := want[min(q.offset, len(want)):min(q.offset+q.limit, len(want))]
					wantIDs := make([]string, len(page))
					for i, k := range page {
						wantIDs[i] = k.id
					}
					if strings.Join(ids(got), ",") != strings.Join(wantIDs, ",") {
						t.Fatalf("page\n got %v\nwant %v", ids(got), wantIDs)
					}
					for i, l := range got {
						k := page[i]
						if q.lat == nil {
							if l.DistanceKm != nil {
								t.Fatalf("distanceKm without a point: %v", *l.DistanceKm)
							}
							continue
						}
						d := greatCircleKm(*q.lat, *q.lon, *k.lat, *k.lon)
						if l.DistanceKm == nil || math.Abs(*l.DistanceKm-d) > 1e-6 {
							t.Fatalf("distanceKm %v, haversine %v", l.DistanceKm, d)
						}
					}
					for i, l := range got {
						if l.IsWishlisted != page[i].wishedBy[viewer.UserID] {
							t.Fatalf("isWishlisted of %s: %v", l.ID, l.IsWishlisted)
						}
					}
				})
				t.Run("facets/"+viewer.UserID+"/"+raw, func(t *testing.T) {
					q := parseQuery(t, viewer, raw)
					v := url.Values{}
					for k, vs := range q.values {
						v[k] = vs
					}
					v.Set("docs", "false")
					r := s.Do(testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/listings?" + v.Encode(), Token: s.Token(viewer)})
					if r.Status != http.StatusOK {
						t.Fatalf("%d %s", r.Status, r.Body)
					}
					var f struct {
						TotalDocs int
						Filters   map[string][]struct {
							Value string
							Count int
						}
					}
					r.Decode(t, &f)
					if f.TotalDocs != len(q.expect(all)) {
						t.Fatalf("totalDocs %d, brute force %d", f.TotalDocs, len(q.expect(all)))
					}
					want := q.facets(all)
					if len(f.Filters) != len(want) {
						t.Fatalf("filters %v", f.Filters)
					}
					for name, counts := range want {
						got := map[string]int{}
						for i, fv := range f.Filters[name] {
							got[fv.Value] = fv.Count
							if i > 0 && fv.Count > f.Filters[name][i-1].Count {
								t.Fatalf("%s not most frequent first: %v", name, f.Filters[name])
							}
						}
						if fmt.Sprint(got) != fmt.Sprint(counts) {
							t.Fatalf("facet %s\n got %v\nwant %v", name, got, counts)
						}
					}
				})
			}
		}
		t.Run("updatedAtUTC", func(t *testing.T) {
			got, total := search(t, s, outsider, url.Values{"sortBy": {"updatedAtUTC"}, "limit": {"100"}})
			want := parseQuery(t, outsider, "").expect(all)
			if total != len(want) || len(got) != min(100, len(want)) {
				t.Fatalf("total %d, want %d", total, len(want))
			}
			for i := 1; i < len(got); i++ {
				if got[i].UpdatedAtUTC < got[i-1].UpdatedAtUTC {
					t.Fatalf("not ascending by updatedAtUTC at %d", i)
				}
			}
		})
		t.Run("csv", func(t *testing.T) {
			raw := "f:commodityType=sheep&latitude=54&longitude=-3&distanceKm=400"
			q := parseQuery(t, outsider, raw)
			r := s.Do(testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/listings?format=csv&limit=1&" + raw, Token: s.Token(outsider)})
			if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv") || !strings.HasPrefix(r.Header.Get("Content-Disposition"), "attachment") {
				t.Fatalf("%d %v", r.Status, r.Header)
			}
			rows, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			want := q.expect(all)
			if len(rows) != len(want)+1 || rows[0][0] != "id" || rows[0][21] != "distanceKm" {
				t.Fatalf("%d rows for %d matches; header %v", len(rows), len(want), rows[0])
			}
			for i, k := range want {
				row := rows[i+1]
				if row[0] != k.id || row[1] != "sheep" {
					t.Fatalf("row %d: %v, want %s", i, row, k.id)
				}
				if strings.HasPrefix(row[7], "=") {
					t.Fatalf("formula not escaped: %q", row[7])
				}
				if d, err := strconv.ParseFloat(row[21], 64); err != nil || math.Abs(d-greatCircleKm(54, -3, *k.lat, *k.lon)) > 1e-6 {
					t.Fatalf("distanceKm cell %q", row[21])
				}
			}
		})
	})
}

func TestSearchQueryValidation(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		tok := s.Token(outsider)
		req := func(q string) testkit.Request {
			return testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/listings?" + q, Token: tok}
		}
		paths := func(want ...string) func(t *testing.T, r *testkit.Response) {
			return func(t *testing.T, r *testkit.Response) { wantPaths(t, r, want...) }
		}
		s.Run(t, []testkit.Scenario{
			{Name: "latitudeOnly400", Req: req("latitude=53"), Status: 400, Code: "validation_failed", Check: paths("longitude", "distanceKm")},
			{Name: "noDistance400", Req: req("latitude=53&longitude=-1"), Status: 400, Code: "validation_failed", Check: paths("distanceKm")},
			{Name: "outOfRange400", Req: req("latitude=91&longitude=-181&distanceKm=-1"), Status: 400, Code: "validation_failed", Check: paths("latitude", "longitude", "distanceKm")},
			{Name: "enums400", Req: req("f:status=active&f:commodityType=pigs&f:commoditySexes=mares&f:commodityAdditionalInfo=spotty&format=xml"), Status: 400, Code: "validation_failed",
				Check: paths("f:status", "f:commodityType", "f:commoditySexes", "f:commodityAdditionalInfo", "format")},
			{Name: "ages400", Req: req("minAge=-1&maxAge=5"), Status: 400, Code: "validation_failed", Check: paths("minAge")},
			{Name: "agesOrder400", Req: req("minAge=10&maxAge=5"), Status: 400, Code: "validation_failed", Check: paths("maxAge")},
			{Name: "limit0_400", Req: req("limit=0"), Status: 400, Code: "validation_failed", Check: paths("limit")},
			{Name: "limit101_400", Req: req("limit=101&offset=-1"), Status: 400, Code: "validation_failed", Check: paths("limit", "offset")},
			{Name: "sortUnknown400", Req: req("sortBy=colour"), Status: 400, Code: "bad_request"},
			{Name: "sortDistanceNoPoint400", Req: req("sortBy=distanceKm"), Status: 400, Code: "validation_failed", Check: paths("sortBy")},
			{Name: "notANumber400", Req: req("latitude=north&longitude=1&distanceKm=5"), Status: 400, Code: "bad_request"},
			{Name: "notABool400", Req: req("isWishlisted=maybe"), Status: 400, Code: "bad_request"},
			{Name: "csvFacets400", Req: req("docs=false&format=csv"), Status: 400, Code: "validation_failed", Check: paths("format")},
			{Name: "tooLongBreed400", Req: req("f:commodityBreed=" + strings.Repeat("b", 101)), Status: 400, Code: "validation_failed", Check: paths("f:commodityBreed")},
			{Name: "noToken401", Req: testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/listings"}, Status: 401, Code: unauthorised},
			{Name: "empty200", Req: req(""), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				if string(r.Body) != "[]" || r.Header.Get("X-Total-Count") != "0" {
					t.Fatalf("%s %v", r.Body, r.Header)
				}
			}},
			{Name: "emptyFacets200", Req: req("docs=false"), Status: 200, Check: func(t *testing.T, r *testkit.Response) {
				want := `{"totalDocs":0,"filters":{"commodityAdditionalInfo":[],"commodityBreed":[],"commodityBreedSociety":[],"commoditySexes":[],"commodityType":[],"status":[]}}`
				if string(r.Body) != want {
					t.Fatalf("%s", r.Body)
				}
			}},
		})
	})
}
