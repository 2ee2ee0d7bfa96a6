package imports_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"

	lt "github.com/agritrade/api/logistics/internal/logisticstest"
	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
	"github.com/xuri/excelize/v2"
)

const batchPath = "/logistics/v1/loads/batch"

// upload builds a multipart request with the form fields (in order) and a file part.
func upload(t testing.TB, token, filename string, content []byte, fields ...string) testkit.Request {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if filename != "" {
		fw, err := w.CreateFormFile("file", filename)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(content); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return testkit.Request{Method: http.MethodPost, Path: batchPath, Token: token, Body: bytes.NewReader(b.Bytes()), ContentType: w.FormDataContentType()}
}

// uploadFileFirst is upload with the file part first and the form fields
// after it, the order "Try it" and generated clients may send.
func uploadFileFirst(t testing.TB, token, filename string, content []byte, fields ...string) testkit.Request {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	fw, err := w.CreateFormFile("file", filename)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(content); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return testkit.Request{Method: http.MethodPost, Path: batchPath, Token: token, Body: bytes.NewReader(b.Bytes()), ContentType: w.FormDataContentType()}
}

// Result is the decoded import result.
type Result struct {
	Success    int `json:"success"`
	Validation int `json:"validation"`
	Errors     int `json:"errors"`
	Results    []struct {
		Rows      string   `json:"rows"`
		Status    string   `json:"status"`
		Message   []string `json:"message"`
		Summary   string   `json:"summary"`
		ID        string   `json:"id"`
		Reference string   `json:"reference"`
	} `json:"results"`
}

func doImport(t *testing.T, s *testkit.Server, req testkit.Request) Result {
	t.Helper()
	r := s.Do(req)
	if r.Status != http.StatusOK {
		t.Fatalf("import: %d %s\nlogs: %s", r.Status, r.Body, lastLines(s.Logs.String(), 5))
	}
	var res Result
	r.Decode(t, &res)
	return res
}

const header = "organiserId,organiserName,commodityId,reference,deliveryDateISO,weight,weightNet,ticketNumber,vehicleRegistration,pickupPostcode,dropoffPostcode,tags\n"

func TestBatchUpload(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		org := s.Token(lt.Organiser)
		file := header +
			",,1,IMP-1,2026-09-01,29.5,,WB-1,AB12 CDE,CB1 2AB,PE1 1AA,harvest; wheat\n" +
			"org-grain,Grain Co,2,IMP-2,2026-09-02T10:00:00Z,,,,,,,\n" +
			"org-grain,Grain Co,999999,IMP-3,2026-09-03,heavy,,,,,,\n" + // unknown commodity, bad weight
			",,,IMP-4,not-a-date,,,,,,,\n" + // commodityId and date
			"org-haul,Haul Ltd,1,IMP-5,2026-09-05,1,,,,,,\n" + // not the caller's organisation
			",,,,,,,,,,,\n" + // blank: skipped
			",,1,IMP-6,2026-09-06,-4,,,,,,a;b\n"
		res := doImport(t, s, upload(t, org, "loads.csv", []byte(file)))
		if res.Success != 2 || res.Validation != 3 || res.Errors != 1 || len(res.Results) != 6 {
			t.Fatalf("first upload: %+v", res)
		}
		want := []struct{ rows, status, ref string }{
			{"2", "success", "IMP-1"}, {"3", "success", "IMP-2"}, {"4", "validation", "IMP-3"},
			{"5", "validation", "IMP-4"}, {"6", "error", "IMP-5"}, {"8", "validation", "IMP-6"},
		}
		for i, w := range want {
			got := res.Results[i]
			if got.Rows != w.rows || got.Status != w.status || got.Reference != w.ref {
				t.Errorf("result %d: %+v, want %+v", i, got, w)
			}
		}
		if !slices.Equal(res.Results[2].Message, []string{"weight: must be a number", "commodityId: is not a known commodity"}) {
			t.Errorf("messages of row 4: %q", res.Results[2].Message)
		}
		if m := strings.Join(res.Results[3].Message, "|"); !strings.Contains(m, "commodityId") || !strings.Contains(m, "deliveryDateISO") {
			t.Errorf("messages of row 5: %q", m)
		}
		if res.Results[0].ID == "" || res.Results[0].Summary != "load IMP-1 created" || res.Results[2].ID != "" {
			t.Errorf("ids and summaries: %+v", res.Results)
		}
		got, total := lt.Search(t, s, lt.Organiser, "sortBy=reference")
		if total != "2" || !slices.Equal(lt.Refs(got), []string{"IMP-1", "IMP-2"}) {
			t.Fatalf("after the first upload: %v", lt.Refs(got))
		}
		l := got[0]
		if l.Organiser.ID != "org-grain" || l.Organiser.Name != "Grain Co" || l.Weight.Weight != 29.5 || l.Weight.Name != "tonne" || l.TicketNumber != "WB-1" ||
			l.VehicleRegistration != "AB12 CDE" || l.PickupPostcode != "CB1 2AB" || !slices.Equal(l.Tags, []string{"harvest", "wheat"}) || l.Status != "upcoming" {
			t.Errorf("imported load %+v", l)
		}
		if got[1].DeliveryDateISO != "2026-09-02T10:00:00Z" || got[1].Commodity.Name != "Barley" || got[1].Weight != nil {
			t.Errorf("imported load %+v", got[1])
		}

		// The same file again creates nothing: the rows are unchanged.
		again := doImport(t, s, upload(t, org, "loads.csv", []byte(file)))
		if again.Success != 2 || again.Validation != 3 || again.Errors != 1 || again.Results[0].ID != res.Results[0].ID || again.Results[0].Summary != "load IMP-1 unchanged" {
			t.Fatalf("second upload: %+v", again)
		}
		if _, total := lt.Search(t, s, lt.Organiser, ""); total != "2" {
			t.Fatalf("after the second upload: %s loads", total)
		}
		if got := loadEvents(t, db); len(got) != 0 {
			t.Fatalf("uploads that created or changed nothing announced load.updated: %v", got)
		}

		// A changed row updates its load (keeping id, status and hand-offs); a completed load no longer changes.
		lt.Send(t, s, lt.Organiser, "driver", []map[string]any{{"loadId": res.Results[1].ID, "driverId": lt.Driver.UserID}}, 200)
		pod := s.Do(testkit.Request{Method: http.MethodPost, Path: "/logistics/v1/loads/" + res.Results[0].ID + "/proof-of-delivery", Token: org,
			JSON: map[string]any{"weightNet": 29, "ticketNumber": "WB-1", "vehicleRegistration": "AB12 CDE", "files": nil}})
		if pod.Status != 200 {
			t.Fatalf("pod %d %s", pod.Status, pod.Body)
		}
		changed := header +
			",,1,IMP-1,2026-09-01,31,,WB-1,AB12 CDE,CB1 2AB,PE1 1AA,harvest\n" + // completed: refused
			",,3,IMP-2,2026-09-02T10:00:00Z,12,,,,,,late\n" + // in transit: updated
			",,1,IMP-7,2026-09-07,1,,,,,,\n" +
			",,1,IMP-7,2026-09-08,2,,,,,,\n" // repeated in the file: the later row wins
		before := loadEvents(t, db)
		third := doImport(t, s, upload(t, org, "more.csv", []byte(changed)))
		if third.Success != 3 || third.Errors != 1 || third.Results[0].Status != "error" || third.Results[1].Summary != "load IMP-2 updated" ||
			third.Results[1].ID != res.Results[1].ID || third.Results[2].Summary != "load IMP-7 created" || third.Results[3].Summary != "load IMP-7 updated" {
			t.Fatalf("third upload: %+v", third)
		}
		// The load the file changed is announced to its followers, the
		// driver included; the refused row announces nothing.
		events := loadEvents(t, db)
		if a := events[res.Results[1].ID][len(before[res.Results[1].ID]):]; !slices.Equal(a, []string{"org:org-grain", "user:" + lt.Driver.UserID}) {
			t.Errorf("load.updated of the changed load: new audiences %v (all %v)", a, events)
		}
		if len(events[res.Results[0].ID]) != len(before[res.Results[0].ID]) {
			t.Errorf("the refused row of a completed load announced a change: %v", events)
		}
		_, l2 := lt.Get(t, s, lt.Driver, res.Results[1].ID)
		if l2.Status != "in-transit" || l2.Driver == nil || l2.Commodity.ID != lt.Oats || l2.Weight.Weight != 12 || !slices.Equal(l2.Tags, []string{"late"}) {
			t.Errorf("updated load %+v", l2)
		}
		_, l1 := lt.Get(t, s, lt.Organiser, res.Results[0].ID)
		if l1.Weight.Weight != 29.5 || l1.Status != "completed" {
			t.Errorf("the completed load changed: %+v", l1)
		}
		found, _ := lt.Search(t, s, lt.Organiser, "query=imp7")
		if len(found) != 1 || found[0].DeliveryDateISO != "2026-09-08" {
			t.Errorf("IMP-7: %+v", found)
		}
	})
}

// loadEvents answers the audiences of the load.updated events in the event
// log, by load id.
func loadEvents(t *testing.T, db *bun.DB) map[string][]string {
	t.Helper()
	var rows []struct {
		Data     string `bun:"data"`
		Audience string `bun:"audience"`
	}
	if err := db.NewSelect().TableExpr("platform_events AS e").ColumnExpr("e.data, a.audience").
		Join("JOIN platform_event_audiences AS a ON a.event_id = e.id").Where("e.type = ?", "load.updated").
		OrderExpr("e.id, a.audience").Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, r := range rows {
		var d struct{ LoadID string }
		if err := json.Unmarshal([]byte(r.Data), &d); err != nil {
			t.Fatal(err)
		}
		out[d.LoadID] = append(out[d.LoadID], r.Audience)
	}
	return out
}

func TestBatchUploadRequests(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db, testkit.Options{Configure: func(c *config.Config) { c.Files.MaxUploadMB = 1 }})
		org := s.Token(lt.Organiser)
		ok := []byte(header + ",,1,R-1,2026-09-01,,,,,,,\n")
		// Over the 1 MiB limit, with valid rows first: nothing of it may stay.
		var bigRows bytes.Buffer
		bigRows.WriteString(header)
		for i := 0; bigRows.Len() < 1<<20+1000; i++ {
			fmt.Fprintf(&bigRows, ",,1,%s,2026-09-01,,,,,,,\n", lt.Ref("BIG", i))
		}
		big := bigRows.Bytes()
		// Valid rows for two batches, then a row the CSV reader cannot parse.
		var brokenRows bytes.Buffer
		brokenRows.WriteString(header)
		for i := 0; i < 1200; i++ {
			fmt.Fprintf(&brokenRows, ",,1,%s,2026-09-01,,,,,,,\n", lt.Ref("BRK", i))
		}
		brokenRows.WriteString(",,1,\"unterminated,2026-09-01,,,,,,,\n,,1,X,2026-09-01,,,,,,,\n")
		broken := brokenRows.Bytes()
		s.Run(t, []testkit.Scenario{
			{Name: "batch401", Req: upload(t, "", "loads.csv", ok), Status: 401, Code: string(apierr.CodeUnauthorized)},
			{Name: "batch400notMultipart", Req: testkit.Request{Method: http.MethodPost, Path: batchPath, Token: org, JSON: map[string]any{}}, Status: 400, Code: "bad_request"},
			{Name: "batch400noFile", Req: upload(t, org, "", nil, "organisationId", "org-grain", "organisationName", "Grain Co"), Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					if p := r.Error(t).Paths(); !slices.Equal(p, []string{"file"}) {
						t.Errorf("paths %v", p)
					}
				}},
			{Name: "batch400orgWithoutName", Req: upload(t, org, "loads.csv", ok, "organisationId", "org-grain"), Status: 400, Code: "validation_failed"},
			{Name: "batch400columns", Req: upload(t, org, "loads.csv", []byte("reference,colour,Reference\nR-1,red,R-1\n")), Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					e := r.Error(t)
					codes := []string{}
					for _, v := range e.Validation {
						codes = append(codes, v.Code)
					}
					if !slices.Equal(codes, []string{"unknown_column", "duplicate_column", "missing_column", "missing_column"}) {
						t.Errorf("codes %v", codes)
					}
				}},
			{Name: "batch403organisation", Req: upload(t, org, "loads.csv", ok, "organisationId", "org-haul", "organisationName", "Haul Ltd"), Status: 403, Code: "forbidden"},
			{Name: "batch413", Req: upload(t, org, "big.csv", big), Status: 413, Code: "payload_too_large"},
			{Name: "batch400brokenHalfWay", Req: upload(t, org, "broken.csv", broken), Status: 400, Code: "bad_request"},
			{Name: "batch415", Req: upload(t, org, "loads.pdf", []byte("%PDF-1.7\x00\x01\x02 binary")), Status: 415, Code: "unsupported_media_type"},
			{Name: "batch415xls", Req: upload(t, org, "loads.xls", []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1, 0, 0}), Status: 415, Code: "unsupported_media_type"},
			{Name: "batch400emptyFile", Req: upload(t, org, "empty.csv", []byte("  \n")), Status: 400},
			{Name: "batch403organisationAfterFile", Req: uploadFileFirst(t, org, "loads.csv", ok, "organisationId", "org-haul", "organisationName", "Haul Ltd"), Status: 403, Code: "forbidden"},
			{Name: "batch400secondFile", Req: func() testkit.Request {
				var b bytes.Buffer
				w := multipart.NewWriter(&b)
				for _, name := range []string{"a.csv", "b.csv"} {
					fw, err := w.CreateFormFile("file", name)
					if err != nil {
						t.Fatal(err)
					}
					_, _ = fw.Write(ok)
				}
				_ = w.Close()
				return testkit.Request{Method: http.MethodPost, Path: batchPath, Token: org, Body: bytes.NewReader(b.Bytes()), ContentType: w.FormDataContentType()}
			}(), Status: 400, Code: "validation_failed"},
			{Name: "batch200formDefaultsAfterFile", Req: uploadFileFirst(t, s.Token(lt.Carrier), "loads.csv", []byte("Reference, CommodityID ,deliveryDateISO\nR-10,2,2026-10-01\n"), "organisationId", "org-haul", "organisationName", "Haul Ltd"), Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var res Result
					r.Decode(t, &res)
					if res.Success != 1 {
						t.Fatalf("result %s", r.Body)
					}
					if _, l := lt.Get(t, s, lt.Carrier, res.Results[0].ID); l.Organiser.ID != "org-haul" || l.Organiser.Name != "Haul Ltd" {
						t.Errorf("fields after the file were not applied: organiser %+v", l.Organiser)
					}
				}},
			{Name: "batch200formDefaults", Req: upload(t, s.Token(lt.Carrier), "loads.csv", []byte("Reference, CommodityID ,deliveryDateISO\nR-9,2,2026-10-01\n"), "organisationId", "org-haul", "organisationName", "Haul Ltd"), Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var res Result
					r.Decode(t, &res)
					if res.Success != 1 {
						t.Fatalf("result %s", r.Body)
					}
					if _, l := lt.Get(t, s, lt.Carrier, res.Results[0].ID); l.Organiser.ID != "org-haul" || l.Organiser.Name != "Haul Ltd" {
						t.Errorf("organiser %+v", l.Organiser)
					}
				}},
		})
		// Nothing was written by the refused requests.
		if _, total := lt.Search(t, s, lt.Organiser, ""); total != "0" {
			t.Errorf("loads after refused uploads: %s", total)
		}
	})
}

// TestBatchUploadLarge imports more rows than one batch and more results than
// are detailed one by one: counts stay exact, results group, the repeat is idle.
func TestBatchUploadLarge(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		const n = 2600
		var b bytes.Buffer
		b.WriteString(header)
		for i := 0; i < n; i++ {
			if i == 1500 {
				b.WriteString(",,1,BAD,never,,,,,,,\n")
			}
			fmt.Fprintf(&b, ",,1,%s,2026-%02d-%02d,%d,,,,,,\n", lt.Ref("BIG", i), 1+i%12, 1+i%28, i)
		}
		res := doImport(t, s, upload(t, s.Token(lt.Organiser), "big.csv", b.Bytes()))
		if res.Success != n || res.Validation != 1 || res.Errors != 0 {
			t.Fatalf("counts %d/%d/%d", res.Success, res.Validation, res.Errors)
		}
		// 1000 detailed results, then the grouped rows 1002-1501, the bad row 1502 and 1503-2602.
		if len(res.Results) != 1003 {
			t.Fatalf("%d results", len(res.Results))
		}
		tail := res.Results[1000:]
		if tail[0].Rows != "1002-1501" || tail[0].Summary != "500 rows: loads created" || tail[1].Rows != "1502" || tail[1].Status != "validation" || tail[2].Rows != "1503-2602" {
			t.Errorf("grouped results %+v", tail)
		}
		if _, total := lt.Search(t, s, lt.Organiser, ""); total != fmt.Sprint(n) {
			t.Fatalf("%s loads", total)
		}
		again := doImport(t, s, upload(t, s.Token(lt.Organiser), "big.csv", b.Bytes()))
		if again.Success != n || again.Results[1000].Summary != "500 rows: loads unchanged" {
			t.Fatalf("second upload %d %+v", again.Success, again.Results[1000])
		}
		if _, total := lt.Search(t, s, lt.Organiser, ""); total != fmt.Sprint(n) {
			t.Fatalf("%s loads after the repeat", total)
		}
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// workbook builds an XLSX whose first sheet holds rows.
func workbook(t *testing.T, rows [][]any) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	for i, row := range rows {
		cell, err := excelize.CoordinatesToCellName(1, i+1)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.SetSheetRow("Sheet1", cell, &row); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := f.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestBatchUploadXLSX imports a workbook (numbers typed as numbers, as
// spreadsheets save them) under a name that says CSV: the bytes decide.
func TestBatchUploadXLSX(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := lt.NewServer(t, db)
		book := workbook(t, [][]any{
			{"reference", "commodityId", "deliveryDateISO", "weight", "tags", "pickupPostcode"},
			{"XL-1", 2, "2026-10-01", 28.25, "xlsx;first", "LN1 1AA"},
			{"XL-2", 4.0, "2026-10-02", nil, "", ""},
			{"XL-3", "oats", "2026-10-03", 1, "", ""},
		})
		res := doImport(t, s, upload(t, s.Token(lt.Organiser), "looks-like.csv", book))
		if res.Success != 2 || res.Validation != 1 || res.Results[2].Rows != "4" || res.Results[2].Message[0] != "commodityId: must be a positive integer commodity id" {
			t.Fatalf("result %+v", res)
		}
		got, _ := lt.Search(t, s, lt.Organiser, "sortBy=reference")
		if len(got) != 2 || got[0].Commodity.Name != "Barley" || got[0].Weight.Weight != 28.25 || !slices.Equal(got[0].Tags, []string{"xlsx", "first"}) ||
			got[0].PickupPostcode != "LN1 1AA" || got[1].Commodity.Name != "Oilseed rape" || got[1].Weight != nil {
			t.Fatalf("loads %+v", got)
		}
		if again := doImport(t, s, upload(t, s.Token(lt.Organiser), "book.xlsx", book)); again.Results[0].Summary != "load XL-1 unchanged" {
			t.Fatalf("second upload %+v", again)
		}
	})
}
