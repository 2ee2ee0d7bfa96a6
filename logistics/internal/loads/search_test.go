package loads_test

import (
	"encoding/csv"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agritrade/api/logistics/internal/loads"
	lt "github.com/agritrade/api/logistics/internal/logisticstest"
	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// searchFixture creates five loads of the organiser with different dates,
// postcodes, tickets and parties, hands some on and completes one.
func searchFixture(t *testing.T, s *testkit.Server) map[string]lt.Load {
	t.Helper()
	forms := []map[string]any{
		with(lt.LoadForm("S-1"), "deliveryDateISO", "2026-01-10", "pickupPostcode", "CB1 2AB", "ticketNumber", "WB-100"),
		with(lt.LoadForm("S-2"), "deliveryDateISO", "2026-02-10", "pickupPostcode", "SW1A 1AA", "vehicleRegistration", "AB12 CDE"),
		with(lt.LoadForm("S-3"), "deliveryDateISO", "2026-03-10T08:30:00Z", "dropoffPostcode", "EH1 1YZ", "pickupPostcode", "NR1 1AA"),
		with(lt.LoadForm("S-4"), "deliveryDateISO", "2026-03-10T18:00:00Z", "pickupPostcode", "NR1 1AA", "ticketNumber", "=HYPERLINK(\"x\")"),
		with(lt.LoadForm("S-5"), "deliveryDateISO", "2026-04-10", "pickupPostcode", "NR1 1AA", "reference", "S-5, \"quoted\"", "tags", []string{"a", "b"}),
	}
	created := lt.Create(t, s, lt.Organiser, forms...)
	byRef := map[string]lt.Load{}
	for _, l := range created {
		byRef[l.Reference] = l
	}
	lt.Send(t, s, lt.Organiser, "carrier", []map[string]any{
		{"loadId": byRef["S-2"].ID, "carrierId": lt.Carrier.OrgID, "carrierName": "Haul Ltd"},
		{"loadId": byRef["S-3"].ID, "carrierId": "org-other-haulier", "carrierName": "Fast Freight"},
	}, 200)
	lt.Send(t, s, lt.Carrier, "driver", []map[string]any{{"loadId": byRef["S-2"].ID, "driverId": lt.Driver.UserID, "driverName": "Dee Driver"}}, 200)
	r := s.Do(testkit.Request{Method: http.MethodPost, Path: loadsPath + "/" + byRef["S-1"].ID + "/proof-of-delivery", Token: s.Token(lt.Organiser),
		JSON: map[string]any{"weightNet": 30, "ticketNumber": "WB-100", "vehicleRegistration": "YX21 ABC", "files": nil}})
	if r.Status != 200 {
		t.Fatalf("pod: %d %s", r.Status, r.Body)
	}
	return byRef
}

func TestSearch(t *testing.T) {
	testSearch(t)
}

// TestSearchTrigramPath runs the search cases with every arm counted as
// large, so that PostgreSQL answers `query` through the trigram index.
func TestSearchTrigramPath(t *testing.T) {
	defer loads.SetSmallArm(0)()
	testSearch(t)
}

func testSearch(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		searchFixture(t, s)
		// A load of someone else with matching text stays invisible.
		lt.Create(t, s, lt.Outsider, with(lt.LoadForm("S-1"), "organiserId", lt.Outsider.OrgID, "organiserName", "Other Ltd", "pickupPostcode", "CB1 2AB"))

		cases := []struct {
			who   string
			query string
			want  []string
			total string
		}{
			{"organiser", "", []string{"S-1", "S-2", "S-3", "S-4", `S-5, "quoted"`}, "5"},
			{"organiser", "sortDesc=true", []string{`S-5, "quoted"`, "S-4", "S-3", "S-2", "S-1"}, "5"},
			{"organiser", "limit=2&offset=1", []string{"S-2", "S-3"}, "5"},
			{"organiser", "limit=2&offset=10", []string{}, "5"},
			{"organiser", "sortBy=reference&sortDesc=true&limit=1", []string{`S-5, "quoted"`}, "5"},
			{"organiser", "sortBy=ticketNumber", []string{"S-2", "S-3", `S-5, "quoted"`, "S-4", "S-1"}, "5"},
			{"organiser", "sortBy=status", []string{"S-1", "S-2", "S-3", "S-4", `S-5, "quoted"`}, "5"},
			{"organiser", "startDateISO=2026-02-10&endDateISO=2026-03-10", []string{"S-2", "S-3", "S-4"}, "3"},
			{"organiser", "startDateISO=2026-03-10T09:00:00Z", []string{"S-4", `S-5, "quoted"`}, "2"},
			{"organiser", "endDateISO=2026-03-10T09:00:00%2B01:00", []string{"S-1", "S-2"}, "2"},
			{"organiser", "f:status=completed", []string{"S-1"}, "1"},
			{"organiser", "f:status=in-transit", []string{"S-2"}, "1"},
			{"organiser", "f:status=upcoming", []string{"S-3", "S-4", `S-5, "quoted"`}, "3"},
			{"organiser", "f:carrierId=org-haul", []string{"S-2"}, "1"},
			{"organiser", "f:organiserId=org-grain&f:carrierId=org-other-haulier", []string{"S-3"}, "1"},
			{"organiser", "f:organiserId=org-other", []string{}, "0"},
			{"organiser", "query=cb12ab", []string{"S-1"}, "1"},
			{"organiser", "query=CB1%202AB", []string{"S-1"}, "1"},
			{"organiser", "query=sw1a", []string{"S-2"}, "1"},
			{"organiser", "query=eh1%201yz", []string{"S-3"}, "1"},
			{"organiser", "query=wb-100", []string{"S-1"}, "1"},
			{"organiser", "query=ab12cde", []string{"S-2"}, "1"},
			{"organiser", "query=yx21", []string{"S-1"}, "1"},
			{"organiser", "query=fast%20freight", []string{"S-3"}, "1"},
			{"organiser", "query=dee", []string{"S-2"}, "1"},
			{"organiser", "query=grain%20co", []string{"S-1", "S-2", "S-3", "S-4", `S-5, "quoted"`}, "5"},
			{"organiser", "query=quoted", []string{`S-5, "quoted"`}, "1"},
			{"organiser", "query=s-&f:status=upcoming&limit=1", []string{"S-3"}, "3"},
			{"organiser", "query=nothing-like-this", []string{}, "0"},
			{"carrier", "", []string{"S-2"}, "1"},
			{"carrier", "query=cb1", []string{}, "0"},
			{"driver", "", []string{"S-2"}, "1"},
			{"outsider", "query=cb1", []string{"S-1"}, "1"},
		}
		who := map[string]func() string{
			"organiser": func() string { return s.Token(lt.Organiser) },
			"carrier":   func() string { return s.Token(lt.Carrier) },
			"driver":    func() string { return s.Token(lt.Driver) },
			"outsider":  func() string { return s.Token(lt.Outsider) },
		}
		for _, c := range cases {
			r := s.Do(testkit.Request{Method: http.MethodGet, Path: loadsPath + "?" + c.query, Token: who[c.who]()})
			if r.Status != 200 {
				t.Errorf("%s %q: %d %s", c.who, c.query, r.Status, r.Body)
				continue
			}
			var got []lt.Load
			r.Decode(t, &got)
			if !slices.Equal(lt.Refs(got), c.want) || r.Header.Get("X-Total-Count") != c.total {
				t.Errorf("%s %q: %q total %s, want %q total %s", c.who, c.query, lt.Refs(got), r.Header.Get("X-Total-Count"), c.want, c.total)
			}
		}

		org := s.Token(lt.Organiser)
		s.Run(t, []testkit.Scenario{
			{Name: "search401", Req: testkit.Request{Method: http.MethodGet, Path: loadsPath}, Status: 401, Code: string(apierr.CodeUnauthorized)},
			{Name: "search400limit", Req: testkit.Request{Method: http.MethodGet, Path: loadsPath + "?limit=0&offset=-1", Token: org}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "limit", "offset") }},
			{Name: "search400limitMax", Req: testkit.Request{Method: http.MethodGet, Path: loadsPath + "?limit=101", Token: org}, Status: 400, Code: "validation_failed"},
			{Name: "search400sortBy", Req: testkit.Request{Method: http.MethodGet, Path: loadsPath + "?sortBy=weight", Token: org}, Status: 400, Code: "bad_request"},
			{Name: "search400limitNaN", Req: testkit.Request{Method: http.MethodGet, Path: loadsPath + "?limit=ten", Token: org}, Status: 400, Code: "bad_request"},
			{Name: "search400fields", Req: testkit.Request{Method: http.MethodGet, Path: loadsPath + "?startDateISO=yesterday&endDateISO=2026-13-01&f:status=lost&format=xml&query=%20-%20", Token: org}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					wantPaths(t, r, "startDateISO", "endDateISO", "f:status", "format", "query")
				}},
			{Name: "search400range", Req: testkit.Request{Method: http.MethodGet, Path: loadsPath + "?startDateISO=2026-03-01&endDateISO=2026-02-01", Token: org}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "endDateISO") }},
			{Name: "search400queryLong", Req: testkit.Request{Method: http.MethodGet, Path: loadsPath + "?query=" + strings.Repeat("a", 101), Token: org}, Status: 400, Code: "validation_failed"},
		})
	})
}

// readCSV parses a CSV answer, checking the download headers.
func readCSV(t *testing.T, r *testkit.Response, filename string) [][]string {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("csv: %d %s", r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if cd := r.Header.Get("Content-Disposition"); cd != `attachment; filename=`+filename {
		t.Errorf("Content-Disposition %q", cd)
	}
	rows, err := csv.NewReader(strings.NewReader(string(r.Body))).ReadAll()
	if err != nil {
		t.Fatalf("parse csv: %v\n%s", err, r.Body)
	}
	if !slices.Equal(rows[0], loads.CSVHeader) {
		t.Fatalf("header %v", rows[0])
	}
	return rows
}

func column(rows [][]string, name string) []string {
	i := slices.Index(rows[0], name)
	out := []string{}
	for _, r := range rows[1:] {
		out = append(out, r[i])
	}
	return out
}

func TestCSV(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		byRef := searchFixture(t, s)
		org := s.Token(lt.Organiser)

		// Search as CSV: every match, limit and offset ignored, in the search's order.
		rows := readCSV(t, s.Do(testkit.Request{Method: http.MethodGet, Path: loadsPath + "?format=csv&limit=1&offset=3&sortDesc=true", Token: org}), "loads.csv")
		if got := column(rows, "reference"); !slices.Equal(got, []string{`S-5, "quoted"`, "S-4", "S-3", "S-2", "S-1"}) {
			t.Fatalf("references %q", got)
		}
		// Full row of the in-transit load with every party.
		s2 := byRef["S-2"]
		want := []string{s2.ID, "S-2", "org-grain", "Grain Co", "org-haul", "Haul Ltd", lt.Driver.UserID, "Dee Driver",
			"1", "Wheat", "2026-02-10", "SW1A 1AA", "PE1 1AA", "29.5", "", "tonne", "", "AB12 CDE", "in-transit", "harvest"}
		if !slices.Equal(rows[4], want) {
			t.Errorf("row of S-2:\n got %q\nwant %q", rows[4], want)
		}
		// Formula cells are defused; commas and quotes survive the CSV quoting; tags are ;-joined.
		if got := rows[2][slices.Index(rows[0], "ticketNumber")]; got != `'=HYPERLINK("x")` {
			t.Errorf("formula cell %q", got)
		}
		if got := rows[1][slices.Index(rows[0], "tags")]; got != "a;b" {
			t.Errorf("tags cell %q", got)
		}
		if !strings.Contains(string(s.Do(testkit.Request{Method: http.MethodGet, Path: loadsPath + "?format=csv", Token: org}).Body), `"S-5, ""quoted"""`) {
			t.Error("the reference with a comma and quotes is not quoted")
		}
		// Filters apply to the CSV too; an empty result is a header row.
		rows = readCSV(t, s.Do(testkit.Request{Method: http.MethodGet, Path: loadsPath + "?format=csv&query=nothing", Token: org}), "loads.csv")
		if len(rows) != 1 {
			t.Errorf("rows %v", rows)
		}
		rows = readCSV(t, s.Do(testkit.Request{Method: http.MethodGet, Path: loadsPath + "?format=csv", Token: s.Token(lt.Driver)}), "loads.csv")
		if got := column(rows, "reference"); !slices.Equal(got, []string{"S-2"}) {
			t.Errorf("driver CSV %q", got)
		}

		// Completed export: completed loads in the range only, visible to the caller.
		completed := loadsPath + "/completed"
		rows = readCSV(t, s.Do(testkit.Request{Method: http.MethodGet, Path: completed, Token: org}), "completed-loads.csv")
		if got := column(rows, "reference"); !slices.Equal(got, []string{"S-1"}) || column(rows, "weightNet")[0] != "30" || column(rows, "status")[0] != "completed" {
			t.Errorf("completed %q", rows)
		}
		for _, q := range []string{"?startDateISO=2026-01-10&endDateISO=2026-01-10", "?endDateISO=2026-01-31", "?startDateISO=2026-01-01T00:00:00Z"} {
			if got := column(readCSV(t, s.Do(testkit.Request{Method: http.MethodGet, Path: completed + q, Token: org}), "completed-loads.csv"), "reference"); !slices.Equal(got, []string{"S-1"}) {
				t.Errorf("completed%s: %q", q, got)
			}
		}
		for _, c := range []struct{ token, query string }{{org, "?startDateISO=2026-01-11"}, {org, "?endDateISO=2026-01-09"}, {s.Token(lt.Carrier), ""}, {s.Token(lt.Outsider), ""}} {
			if rows := readCSV(t, s.Do(testkit.Request{Method: http.MethodGet, Path: completed + c.query, Token: c.token}), "completed-loads.csv"); len(rows) != 1 {
				t.Errorf("completed%s: %q, want only the header", c.query, rows)
			}
		}
		s.Run(t, []testkit.Scenario{
			{Name: "completed401", Req: testkit.Request{Method: http.MethodGet, Path: completed}, Status: 401, Code: string(apierr.CodeUnauthorized)},
			{Name: "completed400", Req: testkit.Request{Method: http.MethodGet, Path: completed + "?startDateISO=soon&endDateISO=later", Token: org}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "startDateISO", "endDateISO") }},
			{Name: "completed400range", Req: testkit.Request{Method: http.MethodGet, Path: completed + "?startDateISO=2026-02-01&endDateISO=2026-01-01", Token: org}, Status: 400, Code: "validation_failed"},
			{Name: "csv400", Req: testkit.Request{Method: http.MethodGet, Path: loadsPath + "?format=csv&sortBy=nope", Token: org}, Status: 400, Code: "bad_request"},
		})
	})
}

// TestCSVStreamsPastOneBatch makes the keyset stream cross batch boundaries in
// both directions and with every sort field, on both dialects.
func TestCSVStreamsPastOneBatch(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		const n = 1203
		var forms []any
		for i := 0; i < n; i++ {
			forms = append(forms, with(lt.LoadForm(lt.Ref("K", i)), "deliveryDateISO", []string{"2026-05-01", "2026-05-02", "2026-05-03"}[i%3], "ticketNumber", lt.Ref("T", i%7)))
			if len(forms) == 1000 || i == n-1 {
				r := s.Do(testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: s.Token(lt.Organiser), JSON: forms})
				if r.Status != 200 {
					t.Fatalf("create: %d %s", r.Status, r.Body[:200])
				}
				forms = nil
			}
		}
		for _, q := range []string{"", "&sortDesc=true", "&sortBy=reference", "&sortBy=ticketNumber&sortDesc=true", "&sortBy=status"} {
			rows := readCSV(t, s.Do(testkit.Request{Method: http.MethodGet, Path: loadsPath + "?format=csv" + q, Token: s.Token(lt.Organiser)}), "loads.csv")
			refs := column(rows, "reference")
			seen := map[string]bool{}
			for _, r := range refs {
				seen[r] = true
			}
			if len(refs) != n || len(seen) != n {
				t.Errorf("%s: %d rows, %d distinct, want %d", q, len(refs), len(seen), n)
			}
			// The CSV order is the JSON search's order.
			page, _ := lt.Search(t, s, lt.Organiser, "limit=100&offset=600"+q)
			if !slices.Equal(lt.Refs(page), refs[600:700]) {
				t.Errorf("%s: CSV order differs from the search order", q)
			}
		}
	})
}

// TestSearchManyRoles checks that a caller who is organiser, carrier and
// driver at once sees each load once (the search reads disjoint arms), with
// exact totals, on the JSON and CSV paths, also past the number of
// organisations that get arms of their own.
func TestSearchManyRoles(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		both := auth.Principal{UserID: "u-both", Name: "Bo Both", OrgID: "org-grain", OrgName: "Grain Co", Orgs: []string{"org-grain", "org-haul"}}
		other := auth.Principal{UserID: "u-other", OrgID: "org-other", OrgName: "Other Ltd", Orgs: []string{"org-other"}}
		otherForm := func(ref string) map[string]any {
			return with(lt.LoadForm(ref), "organiserId", "org-other", "organiserName", "Other Ltd")
		}
		l1 := lt.Create(t, s, both, lt.LoadForm("M-1"))[0]                                                               // organised by grain
		l2 := lt.Create(t, s, both, with(lt.LoadForm("M-2"), "organiserId", "org-haul", "organiserName", "Haul Ltd"))[0] // organised by haul
		l3, l4, l5 := lt.Create(t, s, other, otherForm("M-3"))[0], lt.Create(t, s, other, otherForm("M-4"))[0], lt.Create(t, s, other, otherForm("M-5"))[0]
		lt.Send(t, s, both, "carrier", []map[string]any{{"loadId": l1.ID, "carrierId": "org-haul"}, {"loadId": l2.ID, "carrierId": "org-haul"}}, 200)
		lt.Send(t, s, both, "driver", []map[string]any{{"loadId": l1.ID, "driverId": both.UserID}, {"loadId": l2.ID, "driverId": both.UserID}}, 200)
		lt.Send(t, s, other, "carrier", []map[string]any{{"loadId": l3.ID, "carrierId": "org-haul"}}, 200)
		lt.Send(t, s, other, "driver", []map[string]any{{"loadId": l3.ID, "driverId": both.UserID}, {"loadId": l4.ID, "driverId": both.UserID}}, 200)
		_ = l5

		many := auth.Principal{UserID: "u-many", OrgID: "org-a", Orgs: []string{"org-a", "org-b", "org-c", "org-d", "org-e", "org-f", "org-g", "org-grain", "org-haul"}}
		for _, c := range []struct {
			who  auth.Principal
			want []string
		}{{both, []string{"M-1", "M-2", "M-3", "M-4"}}, {many, []string{"M-1", "M-2", "M-3"}}, {other, []string{"M-3", "M-4", "M-5"}}} {
			for _, q := range []string{"sortBy=reference", "sortBy=reference&query=grain", "sortBy=reference&sortDesc=true&limit=1&offset=1"} {
				got, total := lt.Search(t, s, c.who, q)
				want := c.want
				if strings.Contains(q, "query=grain") {
					want = slices.DeleteFunc(slices.Clone(want), func(r string) bool { return r != "M-1" })
				}
				if strings.Contains(q, "offset=1") {
					want = []string{c.want[len(c.want)-2]}
					if total != strconv.Itoa(len(c.want)) {
						t.Errorf("%s %q: total %s, want %d", c.who.UserID, q, total, len(c.want))
					}
				} else if total != strconv.Itoa(len(want)) {
					t.Errorf("%s %q: total %s, want %d", c.who.UserID, q, total, len(want))
				}
				if !slices.Equal(lt.Refs(got), want) {
					t.Errorf("%s %q: %v, want %v", c.who.UserID, q, lt.Refs(got), want)
				}
			}
			rows := readCSV(t, s.Do(testkit.Request{Method: http.MethodGet, Path: loadsPath + "?format=csv&sortBy=reference", Token: s.Token(c.who)}), "loads.csv")
			if got := column(rows, "reference"); !slices.Equal(got, c.want) {
				t.Errorf("%s CSV: %v, want %v", c.who.UserID, got, c.want)
			}
		}
	})
}
