package refdata_test

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
	"github.com/uptrace/bun"
)

// newServer builds the real application with the System module over db.
func newServer(t testing.TB, db *bun.DB, opts ...testkit.Options) (*testkit.Server, *system.Module) {
	t.Helper()
	var mod *system.Module
	s := testkit.NewServer(t, db, func(p *app.Platform) []module.Module {
		mod = system.New(p.Deps(system.Name))
		return []module.Module{mod}
	}, opts...)
	return s, mod
}

// upload builds a multipart request carrying data as the file part.
func upload(t testing.TB, token, filename string, data []byte) testkit.Request {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.WriteField("organisationId", "org-admin"); err != nil {
		t.Fatal(err)
	}
	fw, err := w.CreateFormFile("file", filename)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return testkit.Request{Method: http.MethodPost, Path: "/system/v1/commodities/varieties/import", Token: token,
		Body: bytes.NewReader(buf.Bytes()), ContentType: w.FormDataContentType()}
}

// varieties returns the variety list of a grade as the commodity list shows it.
func varieties(t testing.TB, s *testkit.Server, itemID, gradeID int) []string {
	t.Helper()
	r := s.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/commodities"})
	if r.Status != http.StatusOK {
		t.Fatalf("commodities: %d %s", r.Status, r.Body)
	}
	var groups []struct {
		Items []struct {
			ID    int `json:"id"`
			Types []struct {
				Grades []struct {
					ID        int      `json:"id"`
					Varieties []string `json:"varieties"`
				} `json:"grades"`
			} `json:"types"`
		} `json:"items"`
	}
	r.Decode(t, &groups)
	for _, g := range groups {
		for _, it := range g.Items {
			if it.ID != itemID {
				continue
			}
			for _, ty := range it.Types {
				for _, gr := range ty.Grades {
					if gr.ID == gradeID {
						return gr.Varieties
					}
				}
			}
		}
	}
	t.Fatalf("grade %d of commodity %d not listed", gradeID, itemID)
	return nil
}

func execSQL(t testing.TB, db *bun.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), query, args...); err != nil {
		t.Fatal(err)
	}
}
