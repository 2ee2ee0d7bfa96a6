package loads_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	lt "github.com/agritrade/api/logistics/internal/logisticstest"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// refused asserts a 400 validation_failed naming exactly paths (path:code),
// and that no load was written.
func refused(t *testing.T, s *testkit.Server, db *bun.DB, req testkit.Request, want ...string) {
	t.Helper()
	before := countLoads(t, db)
	r := s.Do(req)
	if r.Status != http.StatusBadRequest {
		t.Fatalf("%s %s: %d %s", req.Method, req.Path, r.Status, r.Body)
	}
	e := r.Error(t)
	var got []string
	for _, v := range e.Validation {
		got = append(got, v.Path+":"+v.Code)
	}
	if e.Code != "validation_failed" || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s %s: %s %v, want validation_failed %v", req.Method, req.Path, e.Code, got, want)
	}
	if after := countLoads(t, db); after != before {
		t.Errorf("%s %s: %d loads before, %d after a refusal", req.Method, req.Path, before, after)
	}
}

func rawJSON(t *testing.T, v any, replace ...string) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer(replace...).Replace(string(b))
}

func TestCreateLoad_400_NULInReference(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		refused(t, s, db, testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: s.Token(lt.Organiser),
			JSON: lt.LoadForm("NUL\x00REF")}, "reference:nul_character")
	})
}

func TestCreateLoad_400_InvalidUTF8InAnItemOfAList(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		// json.Marshal would repair the bytes: they are put in afterwards.
		body := rawJSON(t, []any{lt.LoadForm("OK-1"), lt.LoadForm("BAD-UTF8")}, "BAD-UTF8", "BAD-\xff\xfe", `"harvest"`, "\"har\xc3\"")
		refused(t, s, db, testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: s.Token(lt.Organiser), JSON: body},
			"[0].tags[0]:invalid_utf8", "[1].reference:invalid_utf8", "[1].tags[0]:invalid_utf8")
	})
}

func TestCreateLoad_400_DeliveryDateOutsideTheSaneRange(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		for _, d := range []string{"1899-12-31", "2201-01-01", "0001-01-01T00:00:00Z", "9999-12-31"} {
			form := lt.LoadForm("DATE-" + d)
			form["deliveryDateISO"] = d
			refused(t, s, db, testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: s.Token(lt.Organiser), JSON: form}, "deliveryDateISO:range")
		}
		for _, d := range []string{"1900-01-01", "2200-12-31"} {
			form := lt.LoadForm("DATE-" + d)
			form["deliveryDateISO"] = d
			if r := s.Do(testkit.Request{Method: http.MethodPost, Path: loadsPath, Token: s.Token(lt.Organiser), JSON: form}); r.Status != http.StatusOK {
				t.Errorf("%s: %d %s", d, r.Status, r.Body)
			}
		}
	})
}

func TestSearchLoads_400_DatesOutsideTheSaneRangeAndBadText(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		tok := s.Token(lt.Organiser)
		for target, want := range map[string]string{
			loadsPath + "?startDateISO=0001-01-01":               "startDateISO:range",
			loadsPath + "/completed?endDateISO=2201-01-01":       "endDateISO:range",
			loadsPath + "?query=wheat%00":                        "query:nul_character",
			loadsPath + "?f:organiserId=%FF":                     "f:organiserId:invalid_utf8",
			loadsPath + "/by-ids?ids=0190a1b2-c3d4-7e5f,%00x":    "ids:nul_character",
			loadsPath + "/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a%00": "id:nul_character",
		} {
			r := s.Do(testkit.Request{Method: http.MethodGet, Path: target, Token: tok})
			if r.Status != http.StatusBadRequest {
				t.Errorf("%s: %d %s", target, r.Status, r.Body)
				continue
			}
			if e := r.Error(t); e.Code != "validation_failed" || len(e.Validation) != 1 || e.Validation[0].Path+":"+e.Validation[0].Code != want {
				t.Errorf("%s: %s %+v, want %s", target, e.Code, e.Validation, want)
			}
		}
	})
}

func TestBatchUpload_RowsWithCellsThatCannotBeStoredAreRefused(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		tok := s.Token(lt.Organiser)
		// Clean rows first, so that the bad bytes lie beyond what the format
		// detection looks at (8 KiB).
		var b strings.Builder
		b.WriteString("commodityId,reference,deliveryDateISO,ticketNumber\n")
		for i := 0; b.Len() < 10<<10; i++ {
			b.WriteString("1,CLEAN-" + strings.Repeat("x", 40) + "-" + string(rune('a'+i%26)) + itoa(i) + ",2026-10-01,\n")
		}
		b.WriteString("1,NUL-\x00,2026-10-01,\n")
		b.WriteString("1,BAD-ROW,2026-10-01,T\xff\n")
		b.WriteString("1,OLD-ROW,1812-10-01,\n")
		before := countLoads(t, db)
		r := s.Do(batchRequest(t, tok, b.String()))
		if r.Status != http.StatusOK {
			t.Fatalf("upload: %d %s", r.Status, r.Body)
		}
		var res struct {
			Success, Validation int
			Results             []struct {
				Status  string
				Message []string
			}
		}
		r.Decode(t, &res)
		bad := res.Results[len(res.Results)-3:]
		if res.Validation != 3 || countLoads(t, db) != before+res.Success ||
			bad[0].Status != "validation" || !strings.Contains(strings.Join(bad[0].Message, "|"), "reference") ||
			!strings.Contains(strings.Join(bad[1].Message, "|"), "ticketNumber") || !strings.Contains(strings.Join(bad[2].Message, "|"), "deliveryDateISO") {
			t.Fatalf("result: %d ok, %d refused, last rows %+v", res.Success, res.Validation, bad)
		}
		for _, ref := range []string{"BAD-ROW", "OLD-ROW"} { // (and the NUL row: the count above)
			if got := storedByReference(t, db, ref); len(got) != 0 {
				t.Errorf("%q was stored: %+v", ref, got)
			}
		}
		// A form field that cannot be stored refuses the upload.
		before = countLoads(t, db)
		r = s.Do(batchRequest(t, tok, "commodityId,reference,deliveryDateISO\n1,FORM-1,2026-10-01\n", "organisationId", lt.Organiser.OrgID, "organisationName", "Grain\x00Co"))
		if r.Status != http.StatusBadRequest || r.Error(t).Code != "validation_failed" || strings.Join(r.Error(t).Paths(), ",") != "organisationName" {
			t.Fatalf("form field: %d %s", r.Status, r.Body)
		}
		if countLoads(t, db) != before {
			t.Error("a refused upload wrote loads")
		}
	})
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
