package refdata_test

import (
	"bytes"
	"crypto/rand"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/tabular"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
	"github.com/xuri/excelize/v2"
)

// Grade ids of the seed used below.
const (
	wheat, millingGroup1, millingGroup2, feedWheat = 1, 111, 112, 121
	barley, maltingSpring                          = 2, 211
)

func importResult(t *testing.T, r *testkit.Response) tabular.Result {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("import: %d %s", r.Status, r.Body)
	}
	var res tabular.Result
	r.Decode(t, &res)
	return res
}

func TestImportOverwrites(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, _ := newServer(t, db)
		admin := s.Token(testkit.Admin)
		before2 := varieties(t, s, wheat, millingGroup2)
		beforeFeed := varieties(t, s, wheat, feedWheat)
		etag := s.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/commodities"}).Header.Get("ETag")

		csv := "\ufeffcommodityId;type;grade;variety\r\n" +
			"1;Milling;Group 1;Skyfall\r\n" +
			"1;milling;GROUP 1;KWS Zyatt\r\n" +
			"1;Milling;Group 1;skyfall\r\n" + // a repeat: listed once
			"2;Malting;Spring;Laureate\r\n" +
			"2;Malting;Spring;Skyway\r\n"
		res := importResult(t, s.Do(upload(t, admin, "varieties.csv", []byte(csv))))
		if res.Success != 5 || res.Validation != 0 || res.Errors != 0 || len(res.Results) != 5 {
			t.Fatalf("result %+v", res)
		}
		first := res.Results[0]
		if first.Rows != "2" || first.Status != "success" || first.ID != "111" || first.Reference != "1/Milling/Group 1" || !strings.Contains(first.Summary, "Skyfall") {
			t.Fatalf("first row %+v", first)
		}
		if res.Results[2].Rows != "4" || len(res.Results[2].Message) != 1 {
			t.Fatalf("the repeat is not flagged: %+v", res.Results[2])
		}
		if got := varieties(t, s, wheat, millingGroup1); !reflect.DeepEqual(got, []string{"Skyfall", "KWS Zyatt"}) {
			t.Fatalf("Group 1 varieties %v, want exactly the file's", got)
		}
		if got := varieties(t, s, barley, maltingSpring); !reflect.DeepEqual(got, []string{"Laureate", "Skyway"}) {
			t.Fatalf("spring malting barley %v", got)
		}
		// Grades the file does not name keep their lists.
		if got := varieties(t, s, wheat, millingGroup2); !reflect.DeepEqual(got, before2) {
			t.Fatalf("Group 2 changed: %v, was %v", got, before2)
		}
		if got := varieties(t, s, wheat, feedWheat); !reflect.DeepEqual(got, beforeFeed) {
			t.Fatalf("feed wheat changed: %v", got)
		}
		// The cached lists were dropped: a new tag.
		if now := s.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/commodities"}).Header.Get("ETag"); now == etag {
			t.Fatal("the commodity list still has the tag of before the import")
		}
		if now := s.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/settings/GB", Token: admin}); !strings.Contains(string(now.Body), "Skyway") {
			t.Fatal("the settings document does not show the import")
		}

		// Importing again replaces again (overwrite, not append).
		res = importResult(t, s.Do(upload(t, admin, "again.csv", []byte("commodityId,type,grade,variety\n1,Milling,Group 1,Crusoe\n"))))
		if res.Success != 1 {
			t.Fatalf("%+v", res)
		}
		if got := varieties(t, s, wheat, millingGroup1); !reflect.DeepEqual(got, []string{"Crusoe"}) {
			t.Fatalf("Group 1 varieties %v after the second import", got)
		}
	})
}

func TestImportXLSX(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, _ := newServer(t, db)
		f := excelize.NewFile()
		rows := [][]any{
			{"Commodity ID", "Type", "Grade", "Variety"},
			{101, "Feed", "Winter", "Graham"},
			{101, "Feed", "Winter", "SY Insitor"},
			{},
			{101, "Feed", "Winter", ""},
		}
		for i, r := range rows {
			cell, _ := excelize.CoordinatesToCellName(1, i+1)
			if err := f.SetSheetRow("Sheet1", cell, &r); err != nil {
				t.Fatal(err)
			}
		}
		var buf bytes.Buffer
		if err := f.Write(&buf); err != nil {
			t.Fatal(err)
		}
		// The name says .csv: the bytes decide.
		res := importResult(t, s.Do(upload(t, s.Token(testkit.Admin), "misnamed.csv", buf.Bytes())))
		if res.Success != 2 || res.Validation != 1 || res.Results[2].Rows != "5" || res.Results[2].Status != "validation" {
			t.Fatalf("result %+v", res)
		}
		if got := varieties(t, s, 101, 10111); !reflect.DeepEqual(got, []string{"Graham", "SY Insitor"}) {
			t.Fatalf("Irish winter feed wheat %v", got)
		}
	})
}

func TestImportPartialFailure(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, _ := newServer(t, db)
		before := varieties(t, s, wheat, millingGroup2)
		csv := "variety,grade,type,commodityId,notes\n" + // columns in any order, extra ones ignored
			"Extase Plus,Group 1,Milling,1,ok\n" +
			"Ghost,Group 1,Milling,999,unknown commodity\n" +
			"Ghost,Group 9,Milling,1,unknown grade\n" +
			"Ghost,Group 1,Durum,1,unknown type\n" +
			",Group 2,Milling,1,no variety\n" +
			"Ghost,Group 2,Milling,one,bad id\n" +
			strings.Repeat("x", 101) + ",Group 2,Milling,1,too long\n" +
			"Ghost,,,,\n"
		res := importResult(t, s.Do(upload(t, s.Token(testkit.Admin), "partial.csv", []byte(csv))))
		if res.Success != 1 || res.Validation != 7 || res.Errors != 0 || len(res.Results) != 8 {
			t.Fatalf("result %+v", res)
		}
		wantMsg := map[string]string{"3": "commodity 999 not found", "4": "no type", "5": "no type", "6": "variety is required",
			"7": "commodityId must be a positive integer", "8": "at most 100 characters", "9": "type is required"}
		for _, r := range res.Results[1:] {
			if r.Status != "validation" || !strings.Contains(strings.Join(r.Message, "; "), wantMsg[r.Rows]) {
				t.Errorf("row %s: %+v, want a message with %q", r.Rows, r, wantMsg[r.Rows])
			}
		}
		if last := res.Results[7]; len(last.Message) != 3 {
			t.Errorf("every problem of a row is listed: %v", last.Message)
		}
		if got := varieties(t, s, wheat, millingGroup1); !reflect.DeepEqual(got, []string{"Extase Plus"}) {
			t.Fatalf("the valid row was not applied: %v", got)
		}
		// Group 2 was only named by invalid rows: unchanged.
		if got := varieties(t, s, wheat, millingGroup2); !reflect.DeepEqual(got, before) {
			t.Fatalf("Group 2 changed by invalid rows: %v", got)
		}
	})
}

func TestImportBadFiles(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, _ := newServer(t, db)
		admin := s.Token(testkit.Admin)
		before := s.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/commodities"}).Body

		junk := make([]byte, 50<<20)
		if _, err := rand.Read(junk[:1<<20]); err != nil {
			t.Fatal(err)
		}
		junk[0] = 0xff // invalid UTF-8 whatever the random bytes
		textJunk := []byte(strings.Repeat("Lorem ipsum dolor sit amet ", 2<<20/27))
		s.Run(t, []testkit.Scenario{
			{Name: "post415junk50MB", Req: upload(t, admin, "varieties.csv", junk), Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type",
				Check: func(t *testing.T, r *testkit.Response) {
					if msg := r.Error(t).Message; !strings.Contains(msg, "neither CSV nor XLSX") {
						t.Fatalf("message %q", msg)
					}
				}},
			{Name: "post415pdf", Req: upload(t, admin, "varieties.xlsx", []byte("%PDF-1.7\n\x00\x01binary")), Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type"},
			{Name: "post415xls", Req: upload(t, admin, "varieties.xls", append([]byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"), make([]byte, 512)...)), Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type",
				Check: func(t *testing.T, r *testkit.Response) {
					if msg := r.Error(t).Message; !strings.Contains(msg, ".xlsx") {
						t.Fatalf("message %q does not say what to do", msg)
					}
				}},
			{Name: "post400empty", Req: upload(t, admin, "empty.csv", nil), Status: http.StatusBadRequest, Code: "bad_request"},
			{Name: "post400noHeader", Req: upload(t, admin, "blank.csv", []byte("\n\n , ,\n")), Status: http.StatusBadRequest, Code: "bad_request",
				Check: func(t *testing.T, r *testkit.Response) {
					if msg := r.Error(t).Message; !strings.Contains(msg, "no header row") {
						t.Fatalf("message %q", msg)
					}
				}},
			{Name: "post400missingColumns", Req: upload(t, admin, "v.csv", []byte("commodity,variety\n1,Skyfall\n")), Status: http.StatusBadRequest, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					if p := r.Error(t).Paths(); !reflect.DeepEqual(p, []string{"header.commodityId", "header.type", "header.grade"}) {
						t.Fatalf("paths %v", p)
					}
				}},
			{Name: "post400textJunkWithoutNewlines", Req: upload(t, admin, "v.csv", textJunk), Status: http.StatusBadRequest, Code: "bad_request"},
			{Name: "post400malformedCSV", Req: upload(t, admin, "v.csv", []byte("commodityId,type,grade,variety\n1,Milling,Group 1,Skyfall\n1,Milling,\"Group 1,x\n")), Status: http.StatusBadRequest, Code: "bad_request"},
			{Name: "post400notMultipart", Req: testkit.Request{Method: http.MethodPost, Path: "/system/v1/commodities/varieties/import", Token: admin, JSON: map[string]any{"file": "x"}}, Status: http.StatusBadRequest, Code: "bad_request"},
			{Name: "post400noFilePart", Req: func() testkit.Request {
				r := upload(t, admin, "x.csv", []byte("a"))
				body := new(bytes.Buffer)
				_, _ = body.ReadFrom(r.Body)
				r.Body = bytes.NewReader(bytes.Replace(body.Bytes(), []byte(`name="file"`), []byte(`name="other"`), 1))
				return r
			}(), Status: http.StatusBadRequest, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					if p := r.Error(t).Paths(); len(p) != 1 || p[0] != "file" {
						t.Fatalf("paths %v", p)
					}
				}},
			{Name: "post403farmer", Req: upload(t, s.Token(testkit.Farmer), "v.csv", []byte("commodityId,type,grade,variety\n1,Milling,Group 1,Hacked\n")), Status: http.StatusForbidden, Code: "forbidden"},
			{Name: "post401", Req: upload(t, "", "v.csv", []byte("commodityId,type,grade,variety\n1,Milling,Group 1,Hacked\n")), Status: http.StatusUnauthorized, Code: string(apierr.CodeUnauthorized)},
		})
		after := s.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/commodities"}).Body
		if !bytes.Equal(before, after) {
			t.Fatal("a rejected file changed the commodities")
		}
	})
}

func TestImportOverUploadLimit(t *testing.T) {
	s, _ := newServer(t, testkit.DB(t, testkit.SQLite), testkit.Options{Configure: func(c *config.Config) { c.Files.MaxUploadMB = 1 }})
	big := "commodityId,type,grade,variety\n" + strings.Repeat("1,Milling,Group 1,Skyfall\n", (2<<20)/26)
	r := s.Do(upload(t, s.Token(testkit.Admin), "big.csv", []byte(big)))
	if r.Status != http.StatusRequestEntityTooLarge || r.Error(t).Code != "payload_too_large" {
		t.Fatalf("status %d %s", r.Status, r.Body)
	}
	if got := varieties(t, s, wheat, millingGroup1); !reflect.DeepEqual(got, []string{"Crusoe", "KWS Zyatt", "Skyfall", "RGT Illustrious"}) {
		t.Fatalf("a refused upload changed the varieties: %v", got)
	}
}
