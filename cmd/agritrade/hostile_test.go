package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// hostileTemplate is a valid request of one route, which the corpus turns
// into hostile variants: path params, query params, JSON body and multipart
// fields are given apart so that each can be spoilt alone.
type hostileTemplate struct {
	as     *auth.Principal
	params map[string]string // path parameter → valid value
	query  [][2]string
	json   any               // a valid JSON body (decoded form), or nil
	form   map[string]string // multipart text fields (read by the route)
	file   *hostileFile      // multipart file part
	header map[string]string // request headers the route reads
	chunk  []byte            // a raw application/offset+octet-stream body (tus)
	// stream marks a route whose answer never ends (the event stream): its
	// requests are cut after streamFor, and what was answered is judged.
	stream bool
}

// streamFor is how long a streaming answer is read before the request is cut.
const streamFor = 300 * time.Millisecond

type hostileFile struct{ name, content string }

// hostileCase is one hostile request and what it must get beyond the rules
// every answer obeys (no 5xx; a 4xx is the error body and changes nothing).
type hostileCase struct {
	name   string
	path   string
	query  string
	ctype  string
	body   []byte
	header map[string]string
	status int    // 0: any status below 500
	code   string // the error code, when status is set
	field  string // a validation path the answer must name ("" for none)
	fcode  string // its validation code
}

const (
	nulText  = "ab\x00cd"
	badUTF8  = "ab\xff\xfecd"
	utf8Mark = "\u2603HOSTILE-UTF8\u2603" // placeholder replaced by invalid bytes after marshalling
)

// absurdDates are date-times, which every date field and parameter accepts.
var absurdDates = []string{"0001-01-01T00:00:00Z", "1899-12-31T23:59:59Z", "2201-01-01T00:00:00Z", "9999-12-31T23:59:59Z"}

// hostileTemplates answers a valid request of every route the corpus knows,
// keyed "METHOD /pattern", over the objects made by f.
func hostileTemplates(t *testing.T, f *fixture) map[string]hostileTemplate {
	t.Helper()
	file := f.file(t)
	load := f.load(t)
	conv, listing := f.conversation(t)
	var short struct{ Code string }
	f.do(t, mOwner, http.MethodPost, "/system/v1/short-urls", map[string]any{"url": "http://api.test/hostile", "template": "default"}, &short)
	var saved struct{ ID string }
	f.do(t, mOther, http.MethodPost, "/livestock/v1/saved-searches", map[string]any{"name": "Hostile", "query": map[string]any{"f:commodityType": "sheep"}}, &saved)
	decoded := func(b []byte) any {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	listingOf := func(i int) any {
		_, b := listingBody(t, i, "Hostile corpus listing")
		return decoded(b)
	}
	owner, admin := &mOwner, &mAdmin
	id := func(v string) map[string]string { return map[string]string{"id": v} }
	tusHeader := func(kv ...string) map[string]string {
		h := map[string]string{"Tus-Resumable": "1.0.0"}
		for i := 0; i+1 < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	m := map[string]hostileTemplate{
		"OPTIONS /system/v1/uploads": {},
		"POST /system/v1/uploads": {as: owner, header: tusHeader("Upload-Length", strconv.Itoa(len(pngBytes)), "Upload-Metadata", uploadMeta("org-a")),
			chunk: pngBytes},
		"HEAD /system/v1/uploads/:id":   {as: owner, params: id(f.upload(t)), header: tusHeader()},
		"PATCH /system/v1/uploads/:id":  {as: owner, params: id(f.upload(t)), header: tusHeader("Upload-Offset", "0"), chunk: pngBytes},
		"DELETE /system/v1/uploads/:id": {as: owner, params: id(f.upload(t)), header: tusHeader()},
		"GET /healthz":                  {},
		"GET /readyz":                   {},
		"GET /versions":                 {},
		"GET /openapi.json":             {},
		"GET /docs":                     {},
		"GET /docs/*asset":              {params: map[string]string{"asset": "docs.js"}},
		"GET /metrics":                  {as: admin},
		"GET /s/:code":                  {params: map[string]string{"code": short.Code}},

		"GET /system/v1/settings":                      {as: owner},
		"GET /system/v1/settings/:country":             {as: owner, params: map[string]string{"country": "GB"}},
		"GET /system/v1/countries":                     {},
		"GET /system/v1/regions":                       {query: [][2]string{{"countryISO", "GB"}}},
		"GET /system/v1/commodities":                   {query: [][2]string{{"countryISO", "GB"}}},
		"GET /system/v1/commodities/:id/specification": {as: owner, params: id("1"), query: [][2]string{{"commodityType", "Milling"}, {"commodityGrade", "Group 1"}}},
		"POST /system/v1/commodities/varieties/import": {as: admin, file: &hostileFile{"varieties.csv", "commodityId,type,grade,variety\n1,Milling,Group 1,Crusoe\n"}},
		"POST /system/v1/cache":                        {as: admin, json: map[string]any{"keys": []any{"refdata:x"}, "prefixes": []any{"refdata:"}, "flush": false}},
		"GET /system/v1/locations/search":              {as: owner, query: [][2]string{{"query", "kendal"}, {"countryISO", "GB"}}},
		"GET /system/v1/locations/address":             {as: owner, query: [][2]string{{"id", "pc:IE:T12"}, {"source", "gazetteer"}}},
		"GET /system/v1/locations/coordinates":         {as: owner, query: [][2]string{{"lat", "54.3285"}, {"lon", "-2.7455"}}},
		"GET /system/v1/locations/three-word-address":  {as: owner, query: [][2]string{{"query", "apple.meadow.tractor"}}},
		"POST /system/v1/files": {as: owner, form: map[string]string{"bucket": "images", "type": "image", "name": "yard.png", "organisationId": "org-a", "organisations": "org-a"},
			file: &hostileFile{"yard.png", string(pngBytes)}},
		"GET /system/v1/files/:id":                   {as: owner, params: id(file)},
		"GET /system/v1/files/:id/info":              {as: owner, params: id(file)},
		"DELETE /system/v1/files/:id":                {as: owner, params: id(file)},
		"POST /system/v1/conversations":              {as: owner, json: map[string]any{"to": mPeer.UserID, "message": "hello", "title": "Lot 4", "listingId": listing, "listingType": "livestock"}},
		"GET /system/v1/conversations":               {as: owner, query: [][2]string{{"limit", "10"}, {"offset", "0"}, {"sortBy", "updatedAtUTC"}, {"sortDesc", "true"}, {"updatedSinceUTC", "2026-01-01T00:00:00Z"}}},
		"GET /system/v1/conversations/:id":           {as: owner, params: id(conv)},
		"GET /system/v1/conversations/listing/:id":   {as: owner, params: id(listing)},
		"POST /system/v1/conversations/:id/messages": {as: owner, params: id(conv), json: map[string]any{"to": mPeer.UserID, "message": "more"}},
		"POST /system/v1/experts/questions":          {as: owner, json: map[string]any{"question": "What is this weed?", "files": []any{map[string]any{"id": file}}}},
		"POST /system/v1/experts/grain-samples":      {as: owner, json: map[string]any{"files": []any{map[string]any{"id": file}}}},
		"POST /system/v1/short-urls":                 {json: map[string]any{"url": "http://api.test/page", "template": "default", "source": "app", "campaign": "spring"}},
		"GET /system/v1/short-urls/:code":            {as: admin, params: map[string]string{"code": short.Code}},

		"GET /logistics/v1/loads": {as: owner, query: [][2]string{{"query", "wheat"}, {"f:status", "upcoming"}, {"f:organiserId", "org-a"}, {"f:carrierId", "org-haul"},
			{"startDateISO", "2026-01-01"}, {"endDateISO", "2026-12-31"}, {"updatedSinceUTC", "2026-01-01T00:00:00Z"}, {"limit", "10"}, {"offset", "0"}, {"sortBy", "deliveryDateISO"}, {"sortDesc", "false"}, {"format", "json"}}},
		"POST /logistics/v1/loads": {as: owner, json: []any{loadForm("HOST-1", "org-a", fileRefs(file))}},
		"POST /logistics/v1/loads/carrier": {as: &mCarrier, json: map[string]any{"carrierId": "org-haul", "carrierName": "Haul Ltd", "organisationId": "org-a", "organisationName": "A Farms",
			"commodityId": 1, "reference": "HOST-C", "deliveryDateISO": "2026-12-01", "weight": 29, "tags": []any{"t"}, "pickupPostcode": "CB1 2AB", "dropoffPostcode": "PE1 1AA"}},
		"GET /logistics/v1/loads/by-ids":                 {as: owner, query: [][2]string{{"ids", load + "," + missing}}},
		"GET /logistics/v1/loads/:id":                    {as: owner, params: id(load)},
		"POST /logistics/v1/loads/send-to-driver":        {as: owner, json: []any{map[string]any{"loadId": load, "driverId": mDriver.UserID, "driverName": mDriver.Name}}},
		"POST /logistics/v1/loads/send-to-carrier":       {as: owner, json: []any{map[string]any{"loadId": load, "carrierId": "org-haul", "carrierName": "Haul Ltd"}}},
		"POST /logistics/v1/loads/proof-of-delivery":     {as: owner, json: []any{proofForm(load, fileRefs(file))}},
		"POST /logistics/v1/loads/:id/proof-of-delivery": {as: owner, params: id(load), json: proofForm(load, nil)},
		"POST /logistics/v1/loads/batch": {as: owner, form: map[string]string{"organisationId": "org-a", "organisationName": "A Farms"},
			file: &hostileFile{"loads.csv", "commodityId,reference,deliveryDateISO,weight,tags\n1,HOST-B,2026-12-01,29,a;b\n"}},
		"GET /logistics/v1/loads/completed": {as: owner, query: [][2]string{{"startDateISO", "2026-01-01"}, {"endDateISO", "2026-12-31"}}},

		"GET /livestock/v1/categories": {as: owner},
		"GET /livestock/v1/listings": {as: owner, query: [][2]string{{"query", "texel"}, {"type", "selling"}, {"updatedSinceUTC", "2026-01-01T00:00:00Z"},
			{"limit", "10"}, {"offset", "0"}, {"sortDesc", "true"}, {"docs", "false"}, {"format", "json"}}},
		"POST /livestock/v1/listings/sheep":          {as: owner, json: sheepListing(false, fileRefs(file))},
		"POST /livestock/v1/listings/cattle":         {as: owner, json: listingOf(3)},
		"POST /livestock/v1/listings/working-dogs":   {as: owner, json: listingOf(6)},
		"POST /livestock/v1/listings/feed":           {as: owner, json: listingOf(7)},
		"POST /livestock/v1/listings/bedding":        {as: owner, json: listingOf(9)},
		"GET /livestock/v1/listings/:id":             {as: owner, params: id(listing)},
		"PATCH /livestock/v1/listings/:id":           {as: owner, params: id(listing), json: map[string]any{"description": "changed", "tags": []any{"a"}, "price": map[string]any{"type": "fixed", "pricePerUnit": map[string]any{"amount": 99, "currency": "GBP"}}}},
		"PUT /livestock/v1/listings/:id/wishlist":    {as: &mOther, params: id(listing)},
		"DELETE /livestock/v1/listings/:id/wishlist": {as: &mOther, params: id(listing)},
		"POST /livestock/v1/listings/:id/report":     {as: &mOther, params: id(listing), json: map[string]any{"reason": "other", "message": "looks odd"}},
		"POST /livestock/v1/listings/:id/close":      {as: owner, params: id(listing), json: map[string]any{"status": "sold"}},
		"POST /livestock/v1/saved-searches": {as: &mOther, json: map[string]any{"name": "Texel near Kendal",
			"query": map[string]any{"f:commodityType": "sheep", "f:commoditySexes": "ewes", "latitude": 54.3, "longitude": -2.7, "distanceKm": 50}}},
		"GET /livestock/v1/saved-searches":             {as: &mOther, query: [][2]string{{"limit", "10"}, {"offset", "0"}}},
		"DELETE /livestock/v1/saved-searches/:id":      {as: &mOther, params: id(saved.ID)},
		"GET /system/v1/events":                        {as: owner, stream: true, header: map[string]string{"Last-Event-ID": "0"}},
		"GET /livestock/v1/admin/reports":              {as: admin},
		"POST /livestock/v1/admin/listings/:id/review": {as: admin, params: id(listing), json: map[string]any{"decision": "clear"}},
	}
	for _, mod := range []string{"system", "logistics", "livestock"} {
		m["GET /"+mod+"/v1/openapi.json"] = hostileTemplate{}
		m["GET /"+mod+"/v1/admin/settings"] = hostileTemplate{as: admin}
		m["PUT /"+mod+"/v1/admin/settings"] = hostileTemplate{as: admin, json: map[string]any{"logging": map[string]any{"level": "info", "filter": "files"}}}
	}
	return m
}

// TestHostileInput_NoRouteAnswers5xx is the hostile-input corpus of issue
// 11, over every route of the engine and both databases: NUL and invalid
// UTF-8 in each path parameter, query parameter, string of the JSON body (at
// any depth) and multipart field; 10,000-deep JSON; wrong JSON types; empty,
// garbage and trailing bodies; wrong content types; absurd dates; oversized
// numbers; overlong strings. No answer may be a 5xx, every 4xx is the API.md
// error body, text that cannot be stored and absurd dates are 400s naming
// the field, and a refused request changes nothing in the database.
func TestHostileInput_NoRouteAnswers5xx(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		start := time.Now()
		s := testkit.NewServer(t, bdb, func(p *app.Platform) []module.Module { return buildModules(p) },
			testkit.Options{NoValidate: true, Configure: func(c *config.Config) { c.RateLimit.PerMinute = 0; c.Log.Level = "error" }})
		f := &fixture{s: s, db: bdb}
		templates := hostileTemplates(t, f)
		var fpTime time.Duration
		fingerprint := func() string {
			began := time.Now()
			defer func() { fpTime += time.Since(began) }()
			return stateHash(t, f)
		}
		var routes []string
		for _, r := range s.App.Engine.Routes() {
			routes = append(routes, r.Method+" "+r.Path)
		}
		sort.Strings(routes)
		var missingRoutes []string
		for _, r := range routes {
			if _, ok := templates[r]; !ok {
				missingRoutes = append(missingRoutes, r)
			}
		}
		if len(missingRoutes) > 0 {
			t.Fatalf("routes of the engine without hostile cases (add them to hostileTemplates): %s", strings.Join(missingRoutes, ", "))
		}
		total, refusedN := 0, 0
		byStatus := map[int]int{}
		for _, r := range routes {
			method, pattern, _ := strings.Cut(r, " ")
			tpl := templates[r]
			token := ""
			if tpl.as != nil {
				token = s.Token(*tpl.as)
			}
			// Writes are checked request by request; reads (which must write
			// nothing, whatever they answer) once over all their cases, which
			// keeps the corpus fast. The redirect counts its visits by design.
			write := method != http.MethodGet
			before := fingerprint()
			for _, hc := range hostileCases(t, pattern, tpl) {
				target := hc.path
				if hc.query != "" {
					target += "?" + hc.query
				}
				req := testkit.Request{Method: method, Path: target, Token: token, ContentType: hc.ctype, Header: hc.header}
				if hc.body != nil {
					req.Body = bytes.NewReader(hc.body)
				}
				res := hostileDo(s, req, tpl.stream)
				total++
				byStatus[res.Status]++
				what := fmt.Sprintf("%s %s [%s]", method, pattern, hc.name)
				checkHostileAnswer(t, what, res, hc)
				switch {
				case res.Status >= 400:
					refusedN++
					if !write {
						break
					}
					if after := fingerprint(); after != before {
						t.Errorf("%s: answered %d but the database changed: %.300s", what, res.Status, res.Body)
						before = after
					}
				case write:
					before = fingerprint() // an accepted write moves the state on
				}
			}
			if !write && pattern != "/s/:code" {
				if after := fingerprint(); after != before {
					t.Errorf("GET %s: its hostile requests changed the database", pattern)
				}
			}
		}
		var statuses []string
		for st, n := range byStatus {
			statuses = append(statuses, fmt.Sprintf("%d: %d", st, n))
		}
		sort.Strings(statuses)
		t.Logf("%d routes, %d hostile requests (%d refused) in %v (%v of it comparing database states); statuses %s",
			len(routes), total, refusedN, time.Since(start).Round(time.Millisecond), fpTime.Round(time.Millisecond), strings.Join(statuses, ", "))
	})
}

// stateHash is the fixture's fingerprint of the tables a write may touch,
// computed by PostgreSQL itself in one round trip (the corpus compares
// states over a thousand times); on SQLite, in process, the fixture's own.
func stateHash(t *testing.T, f *fixture) string {
	t.Helper()
	if f.db.Dialect().Name() != dialect.PG {
		return f.fingerprint(t)
	}
	f.settle(t)
	var parts []string
	for i, ft := range fingerprintTables {
		row := "x::text"
		if ft.columns != "*" {
			row = "ROW(x." + strings.ReplaceAll(ft.columns, ", ", ", x.") + ")::text"
		}
		parts = append(parts, fmt.Sprintf("SELECT %d AS n, md5(coalesce(string_agg(%s, '|' ORDER BY %s), '')) AS h FROM %s x", i, row, row, ft.table))
	}
	var h string
	q := "SELECT md5(string_agg(h, ',' ORDER BY n)) FROM (" + strings.Join(parts, " UNION ALL ") + ") s"
	if err := f.db.NewRaw(q).Scan(context.Background(), &h); err != nil {
		t.Fatalf("state hash: %v", err)
	}
	return h
}

// hostileDo sends req through the engine; a streaming route's request is cut
// after streamFor (its handler returns when the client goes).
func hostileDo(s *testkit.Server, r testkit.Request, stream bool) *testkit.Response {
	if !stream {
		return s.Do(r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), streamFor)
	defer cancel()
	req := s.NewRequest(r).WithContext(ctx)
	rec := httptest.NewRecorder()
	s.App.Engine.ServeHTTP(rec, req)
	return &testkit.Response{Status: rec.Code, Header: rec.Result().Header, Body: rec.Body.Bytes()}
}

// checkHostileAnswer asserts the rules every answer obeys and the case's own
// expectation.
func checkHostileAnswer(t *testing.T, what string, res *testkit.Response, hc hostileCase) {
	t.Helper()
	if res.Status >= 500 {
		t.Errorf("%s: %d %.500s", what, res.Status, res.Body)
		return
	}
	if res.Status >= 400 {
		var b struct {
			Status, Code, Message string
			Validation            []struct{ Path, Code string }
		}
		ct := res.Header.Get("Content-Type")
		if !strings.HasPrefix(ct, "application/json") || json.Unmarshal(res.Body, &b) != nil || b.Status != "error" || b.Code == "" || b.Message == "" || !utf8.Valid(res.Body) {
			t.Errorf("%s: %d without the error body (Content-Type %q): %.300q", what, res.Status, ct, res.Body)
			return
		}
		if hc.status != 0 && hc.field != "" {
			found := false
			for _, v := range b.Validation {
				found = found || (v.Path == hc.field && (hc.fcode == "" || v.Code == hc.fcode))
			}
			if !found {
				t.Errorf("%s: %d %s does not name %s (%s): %.400s", what, res.Status, b.Code, hc.field, hc.fcode, res.Body)
				return
			}
		}
		if hc.code != "" && b.Code != hc.code {
			t.Errorf("%s: code %s, want %s: %.300s", what, b.Code, hc.code, res.Body)
			return
		}
	}
	if hc.status != 0 && res.Status != hc.status {
		t.Errorf("%s: %d, want %d: %.300s", what, res.Status, hc.status, res.Body)
		return
	}
}

// hostileCases turns the template of a route into its hostile variants.
func hostileCases(t *testing.T, pattern string, tpl hostileTemplate) []hostileCase {
	t.Helper()
	path := func(params map[string]string) string {
		var segs []string
		for _, seg := range strings.Split(pattern, "/") {
			if strings.HasPrefix(seg, ":") || strings.HasPrefix(seg, "*") {
				seg = url.PathEscape(params[seg[1:]])
			}
			segs = append(segs, seg)
		}
		return strings.Join(segs, "/")
	}
	query := func(q [][2]string) string {
		var parts []string
		for _, kv := range q {
			parts = append(parts, url.QueryEscape(kv[0])+"="+url.QueryEscape(kv[1]))
		}
		return strings.Join(parts, "&")
	}
	validPath, validQuery := path(tpl.params), query(tpl.query)
	body, ctype := tpl.body(t)
	var out []hostileCase
	add := func(hc hostileCase) {
		if hc.path == "" {
			hc.path = validPath
		}
		if hc.query == "" {
			hc.query = validQuery
		}
		if hc.body == nil && hc.ctype == "" {
			hc.body, hc.ctype = body, ctype
		}
		if hc.header == nil {
			hc.header = tpl.header
		}
		out = append(out, hc)
	}

	// Headers the route reads.
	for h := range tpl.header {
		for _, v := range []string{nulText, badUTF8, "abc", "-1", "123456789012345678901234567890", strings.Repeat("9", 5000)} {
			hdr := map[string]string{}
			for k, v := range tpl.header {
				hdr[k] = v
			}
			hdr[h] = v
			add(hostileCase{name: fmt.Sprintf("header %s=%.20q", h, v), header: hdr})
		}
	}
	textCase := func(name, field, fcode string) hostileCase {
		return hostileCase{name: name + " " + field, status: 400, code: "validation_failed", field: field, fcode: fcode}
	}

	// Path parameters.
	for p := range tpl.params {
		for _, bad := range []struct{ v, code string }{{nulText, httpx.CodeNULCharacter}, {badUTF8, httpx.CodeInvalidUTF8}} {
			params := map[string]string{}
			for k, v := range tpl.params {
				params[k] = v
			}
			params[p] = bad.v
			hc := textCase("path", p, bad.code)
			hc.path = path(params)
			add(hc)
		}
		params := map[string]string{}
		for k, v := range tpl.params {
			params[k] = v
		}
		params[p] = strings.Repeat("x", 4000)
		add(hostileCase{name: "overlong path " + p, path: path(params)})
	}

	// Query parameters: each spoilt alone, then the usual suspects added.
	for i, kv := range tpl.query {
		spoil := func(v string) string {
			q := append([][2]string(nil), tpl.query...)
			q[i] = [2]string{kv[0], v}
			return query(q)
		}
		for _, bad := range []struct{ v, code string }{{nulText, httpx.CodeNULCharacter}, {badUTF8, httpx.CodeInvalidUTF8}} {
			hc := textCase("query", kv[0], bad.code)
			hc.query = spoil(bad.v)
			add(hc)
		}
		add(hostileCase{name: "overlong query " + kv[0], query: spoil(strings.Repeat("y", 20000))})
		add(hostileCase{name: "huge number query " + kv[0], query: spoil("123456789012345678901234567890")})
		if isDateName(kv[0]) {
			for _, d := range absurdDates {
				add(hostileCase{name: "absurd date query " + kv[0] + "=" + d, query: spoil(d), status: 400, code: "validation_failed", field: kv[0], fcode: "range"})
			}
		}
	}
	extra := validQuery
	if extra != "" {
		extra += "&"
	}
	add(hostileCase{name: "hostile extra query", query: extra + "limit=1e400&offset=-99999999999999999999999&sortDesc=maybe"})
	add(hostileCase{name: "NUL query name", query: extra + "k%00=1", status: 400, code: "validation_failed"})

	// JSON bodies.
	if tpl.json != nil {
		generic := replaceAt(tpl.json, nil, nil)
		for _, leaf := range jsonLeaves(generic, "") {
			set := func(v any) []byte { return jsonBody(t, replaceAt(generic, leaf.path, v)) }
			if s, isStr := leaf.value.(string); isStr {
				add(hostileCase{name: "NUL in " + leaf.name, body: set(nulText), ctype: "application/json", status: 400, code: "validation_failed", field: leaf.name, fcode: httpx.CodeNULCharacter})
				add(hostileCase{name: "invalid UTF-8 in " + leaf.name, body: bytes.Replace(set(utf8Mark), []byte(utf8Mark), []byte(badUTF8), 1),
					ctype: "application/json", status: 400, code: "validation_failed", field: leaf.name, fcode: httpx.CodeInvalidUTF8})
				add(hostileCase{name: "overlong " + leaf.name, body: set(strings.Repeat("z", 100000)), ctype: "application/json"})
				if isDateName(leaf.name) && s != "" {
					for _, d := range absurdDates {
						add(hostileCase{name: "absurd date " + leaf.name + "=" + d, body: set(d), ctype: "application/json", status: 400, code: "validation_failed", field: leaf.name, fcode: "range"})
					}
				}
			}
			add(hostileCase{name: "object for " + leaf.name, body: set(map[string]any{"a": []any{1}}), ctype: "application/json"})
			if _, isNum := leaf.value.(float64); isNum {
				for _, n := range []string{"1e400", "-123456789012345678901234567890"} {
					b := bytes.Replace(set(utf8Mark), []byte(`"`+utf8Mark+`"`), []byte(n), 1)
					add(hostileCase{name: "number " + n + " for " + leaf.name, body: b, ctype: "application/json"})
				}
			}
			if _, isStr := leaf.value.(string); !isStr {
				add(hostileCase{name: "string for " + leaf.name, body: set("x"), ctype: "application/json"})
			}
		}
	}
	// Whole bodies, sent to every route (routes without a body must ignore them).
	deepArray := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	deepObject := strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)
	jsonRoute := tpl.json != nil
	expect := func(status int, code string) (int, string) {
		if jsonRoute {
			return status, code
		}
		return 0, ""
	}
	st, code := expect(400, "bad_request")
	add(hostileCase{name: "10,000-deep array", body: []byte(deepArray), ctype: "application/json", status: st, code: code})
	add(hostileCase{name: "10,000-deep object", body: []byte(deepObject), ctype: "application/json", status: st, code: code})
	add(hostileCase{name: "trailing data", body: append(append([]byte{}, body...), []byte(` {"x":1}`)...), ctype: ctype, status: st, code: code})
	add(hostileCase{name: "garbage", body: []byte("\x00\x01\x02garbage\xff"), ctype: "application/json", status: st, code: code})
	add(hostileCase{name: "empty body", body: []byte{}, ctype: "application/json"})
	add(hostileCase{name: "blank body", body: []byte("   \n"), ctype: "application/json"})
	for _, v := range []string{`"x"`, `42`, `true`, `null`, `[]`, `{}`, `[[[]]]`} {
		add(hostileCase{name: "top-level " + v, body: []byte(v), ctype: "application/json"})
	}
	add(hostileCase{name: "text/plain", body: body, ctype: "text/plain"})
	add(hostileCase{name: "bad content type", body: body, ctype: "application/json; charset=\x7f;;"})
	add(hostileCase{name: "multipart without boundary", body: body, ctype: "multipart/form-data"})
	add(hostileCase{name: "multipart garbage", body: []byte("--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.csv\"\r\n\r\nab\x00"), ctype: "multipart/form-data; boundary=b"})

	// Multipart forms.
	if tpl.file != nil {
		for field := range tpl.form {
			for _, bad := range []struct{ v, code string }{{nulText, httpx.CodeNULCharacter}, {badUTF8, httpx.CodeInvalidUTF8}} {
				spoilt := tpl
				spoilt.form = map[string]string{}
				for k, v := range tpl.form {
					spoilt.form[k] = v
				}
				spoilt.form[field] = bad.v
				b, ct := spoilt.body(t)
				add(hostileCase{name: "form field " + field + " " + bad.code, body: b, ctype: ct, status: 400, code: "validation_failed", field: field, fcode: bad.code})
			}
		}
		if strings.HasSuffix(tpl.file.name, ".csv") {
			lines := strings.SplitN(tpl.file.content, "\n", 2)
			for _, cell := range []string{nulText, badUTF8, "0001-01-01", "1e400", strings.Repeat("w", 5000)} {
				spoilt := tpl
				row := strings.Split(strings.TrimSuffix(lines[1], "\n"), ",")
				for i := range row {
					r := append([]string(nil), row...)
					r[i] = cell
					spoilt.file = &hostileFile{tpl.file.name, lines[0] + "\n" + padRows(lines[1]) + strings.Join(r, ",") + "\n"}
					b, ct := spoilt.body(t)
					add(hostileCase{name: fmt.Sprintf("cell %d = %.20q", i, cell), body: b, ctype: ct})
				}
			}
		}
		noFile := tpl
		noFile.file = nil
		b, ct := noFile.body(t)
		add(hostileCase{name: "no file part", body: b, ctype: ct})
	}
	return out
}

// padRows repeats a valid row past the 8 KiB the format detection reads, so
// that a spoilt cell after it reaches the row reader.
func padRows(row string) string {
	var b strings.Builder
	for i := 0; b.Len() < 9<<10; i++ {
		b.WriteString(strings.Replace(row, "HOST-B", fmt.Sprintf("HOST-P%d", i), 1))
		b.WriteString("\n")
	}
	return b.String()
}

func isDateName(name string) bool {
	n := strings.ToLower(name)
	return strings.HasSuffix(n, "dateiso") || strings.HasSuffix(n, "sinceutc") || strings.HasSuffix(n, "dateofbirth")
}

// body encodes the template's body: JSON, multipart, or none.
func (tpl hostileTemplate) body(t *testing.T) ([]byte, string) {
	switch {
	case tpl.json != nil:
		return jsonBody(t, tpl.json), "application/json"
	case tpl.file != nil || tpl.form != nil:
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		names := make([]string, 0, len(tpl.form))
		for k := range tpl.form {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if err := w.WriteField(k, tpl.form[k]); err != nil {
				t.Fatal(err)
			}
		}
		if tpl.file != nil {
			fw, err := w.CreateFormFile("file", tpl.file.name)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = fw.Write([]byte(tpl.file.content))
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes(), w.FormDataContentType()
	case tpl.chunk != nil:
		return tpl.chunk, "application/offset+octet-stream"
	}
	return nil, ""
}

// jsonLeaf is a scalar of a JSON body: its path as a validation names it
// ("items[3].name") and the steps that reach it.
type jsonLeaf struct {
	name  string
	path  []any // string keys and int indexes
	value any
}

func jsonLeaves(v any, name string, steps ...any) []jsonLeaf {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []jsonLeaf
		for _, k := range keys {
			n := k
			if name != "" {
				n = name + "." + k
			}
			out = append(out, jsonLeaves(x[k], n, append(append([]any(nil), steps...), k)...)...)
		}
		return out
	case []any:
		var out []jsonLeaf
		for i, e := range x {
			out = append(out, jsonLeaves(e, fmt.Sprintf("%s[%d]", name, i), append(append([]any(nil), steps...), i)...)...)
		}
		return out
	default:
		return []jsonLeaf{{name: name, path: steps, value: v}}
	}
}

// replaceAt copies v (through a JSON round trip, so that Go types become
// JSON's) and sets the leaf at path; a nil path answers the copy.
func replaceAt(v any, path []any, with any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var c any
	if err := json.Unmarshal(b, &c); err != nil {
		panic(err)
	}
	cur := c
	for i, step := range path {
		last := i == len(path)-1
		switch s := step.(type) {
		case string:
			m := cur.(map[string]any)
			if last {
				m[s] = with
			} else {
				cur = m[s]
			}
		case int:
			a := cur.([]any)
			if last {
				a[s] = with
			} else {
				cur = a[s]
			}
		}
	}
	return c
}
