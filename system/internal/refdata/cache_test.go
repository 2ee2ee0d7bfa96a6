package refdata_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

func countryName(t *testing.T, s *testkit.Server, iso string) string {
	t.Helper()
	var m map[string]struct{ Name string }
	s.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/countries"}).Decode(t, &m)
	return m[iso].Name
}

func clearCache(body any) testkit.Request {
	return testkit.Request{Method: http.MethodPost, Path: "/system/v1/cache", JSON: body}
}

func TestCacheClear(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s, _ := newServer(t, db)
		admin, farmer := s.Token(testkit.Admin), s.Token(testkit.Farmer)
		with := func(r testkit.Request, token string) testkit.Request { r.Token = token; return r }
		message := func(want string) func(t *testing.T, r *testkit.Response) {
			return func(t *testing.T, r *testkit.Response) {
				var c struct{ Status, Message string }
				r.Decode(t, &c)
				if c.Status != "success" || !strings.Contains(c.Message, want) {
					t.Fatalf("confirmation %+v, want %q", c, want)
				}
			}
		}
		warm := func(t *testing.T) {
			for _, p := range []string{"/system/v1/countries", "/system/v1/regions", "/system/v1/commodities?countryISO=GB", "/system/v1/settings"} {
				if r := s.Do(testkit.Request{Method: http.MethodGet, Path: p, Token: farmer}); r.Status != http.StatusOK {
					t.Fatalf("%s: %d", p, r.Status)
				}
			}
		}

		// The cache really serves: a change made behind the API's back stays
		// invisible until the entry is cleared.
		if got := countryName(t, s, "FR"); got != "France" {
			t.Fatalf("FR is %q", got)
		}
		execSQL(t, db, "UPDATE refdata_countries SET name = ? WHERE iso = ?", "République française", "FR")
		if got := countryName(t, s, "FR"); got != "France" {
			t.Fatalf("the country list was not cached: %q", got)
		}
		s.Run(t, []testkit.Scenario{
			{Name: "post200keys", Req: with(clearCache(map[string]any{"keys": []string{"refdata:countries", "refdata:nothing"}}), admin), Status: http.StatusOK,
				Check: message("removed 1 cache entry")},
		})
		if got := countryName(t, s, "FR"); got != "République française" {
			t.Fatalf("after the clear the list still says %q", got)
		}

		warm(t)
		s.Run(t, []testkit.Scenario{
			{Name: "post200prefixes", Req: with(clearCache(map[string]any{"prefixes": []string{"refdata:regions:", "refdata:commodities:"}, "flush": nil}), admin), Status: http.StatusOK,
				Check: message("removed 2 cache entries")},
			{Name: "post200prefixNothingLeft", Req: with(clearCache(map[string]any{"prefixes": []string{"refdata:regions:"}}), admin), Status: http.StatusOK,
				Check: message("removed 0 cache entries")},
		})
		warm(t)
		s.Run(t, []testkit.Scenario{
			{Name: "post200flush", Req: with(clearCache(map[string]any{"flush": true, "keys": []string{"ignored"}}), admin), Status: http.StatusOK,
				Check: func(t *testing.T, r *testkit.Response) {
					message("removed 4 cache entries")(t, r)
					if _, ok, _ := s.Platform.Cache.Get(context.Background(), "refdata:settings:all"); ok {
						t.Fatal("flush left the settings document")
					}
				}},
			{Name: "post200secrets", Req: with(clearCache(map[string]any{"secrets": true}), admin), Status: http.StatusOK, Check: message("reloaded secrets")},
			{Name: "post400nothing", Req: with(clearCache(map[string]any{"flush": false}), admin), Status: http.StatusBadRequest, Code: "validation_failed"},
			{Name: "post400emptyEntries", Req: with(clearCache(map[string]any{"keys": []string{"ok", " "}, "prefixes": []string{""}}), admin), Status: http.StatusBadRequest, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					if p := r.Error(t).Paths(); strings.Join(p, " ") != "keys[1] prefixes[0]" {
						t.Fatalf("paths %v", p)
					}
				}},
			{Name: "post400type", Req: with(clearCache(`{"keys":"refdata:countries"}`), admin), Status: http.StatusBadRequest, Code: "validation_failed"},
			{Name: "post400malformed", Req: with(clearCache(`{"keys":`), admin), Status: http.StatusBadRequest, Code: "bad_request"},
			{Name: "post403", Req: with(clearCache(map[string]any{"flush": true}), farmer), Status: http.StatusForbidden, Code: "forbidden"},
			{Name: "post401", Req: clearCache(map[string]any{"flush": true}), Status: http.StatusUnauthorized, Code: string(apierr.CodeUnauthorized)},
		})
	})
}
