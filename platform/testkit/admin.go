package testkit

import (
	"net/http"
	"testing"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/golang-jwt/jwt/v5"
)

// Challenged checks the WWW-Authenticate challenge of a 401: bare when no
// token was sent (problem ""), invalid_token with the problem otherwise.
func Challenged(problem string) func(t *testing.T, r *Response) {
	return func(t *testing.T, r *Response) {
		t.Helper()
		if got, want := r.Header.Get("WWW-Authenticate"), apierr.Challenge(problem); got != want {
			t.Fatalf("WWW-Authenticate %q, want %q", got, want)
		}
	}
}

// FutureToken mints a token for p issued (iat) ahead of now by ahead.
func FutureToken(t testing.TB, p auth.Principal, ahead time.Duration) string {
	t.Helper()
	now := time.Now()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": p.UserID, "name": p.Name, "org": p.OrgID, "orgs": p.Orgs, "roles": p.Roles,
		"iat": now.Add(ahead).Unix(), "exp": now.Add(ahead + time.Hour).Unix(),
	}).SignedString([]byte(Secret))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Principals used across suites.
var (
	Admin    = auth.Principal{UserID: "admin-1", Name: "Ada Admin", OrgID: "org-admin", OrgName: "AgriTrade", Roles: []string{auth.RoleAdmin}}
	Farmer   = auth.Principal{UserID: "user-farmer", Name: "Fiona Farmer", OrgID: "org-farm", OrgName: "Hill Farm", Orgs: []string{"org-farm"}}
	Outsider = auth.Principal{UserID: "user-out", Name: "Owen Outsider", OrgID: "org-other", OrgName: "Other Ltd", Orgs: []string{"org-other"}}
)

// AdminSettingsScenarios checks a module's GET/PUT admin/settings routes: auth,
// validation, the change taking effect on that module's logger only.
func AdminSettingsScenarios(t *testing.T, s *Server, module, other string) {
	t.Helper()
	path := "/" + module + "/v1/admin/settings"
	admin, farmer := s.Token(Admin), s.Token(Farmer)
	s.Run(t, []Scenario{
		{Name: "get401", Req: Request{Method: http.MethodGet, Path: path}, Status: http.StatusUnauthorized, Code: "unauthorized",
			Check: Challenged("")},
		{Name: "get401expired", Req: Request{Method: http.MethodGet, Path: path, Token: MintToken(t, Admin, -time.Hour)}, Status: http.StatusUnauthorized, Code: "unauthorized",
			Check: Challenged("the token has expired")},
		{Name: "get401badsig", Req: Request{Method: http.MethodGet, Path: path, Token: admin + "x"}, Status: http.StatusUnauthorized, Code: "unauthorized",
			Check: Challenged("the token signature is invalid")},
		{Name: "get401future", Req: Request{Method: http.MethodGet, Path: path, Token: FutureToken(t, Admin, 10*time.Minute)}, Status: http.StatusUnauthorized, Code: "unauthorized",
			Check: Challenged("the token is issued in the future (iat)")},
		{Name: "get403", Req: Request{Method: http.MethodGet, Path: path, Token: farmer}, Status: http.StatusForbidden, Code: "forbidden"},
		{Name: "put403", Req: Request{Method: http.MethodPut, Path: path, Token: farmer, JSON: map[string]any{"logging": map[string]any{"level": "debug"}}}, Status: http.StatusForbidden, Code: "forbidden"},
		{Name: "put400level", Req: Request{Method: http.MethodPut, Path: path, Token: admin, JSON: map[string]any{"logging": map[string]any{"level": "loud", "filter": "bad pattern!"}}}, Status: http.StatusBadRequest, Code: "validation_failed",
			Check: func(t *testing.T, r *Response) {
				e := r.Error(t)
				if len(e.Validation) != 2 || e.Validation[0].Path != "logging.level" || e.Validation[1].Path != "logging.filter" {
					t.Fatalf("validation %+v, want logging.level and logging.filter", e.Validation)
				}
				if string(e.Body) == "" || string(e.Body) == "null" {
					t.Fatalf("body not echoed: %s", r.Body)
				}
			}},
		{Name: "put400missing", Req: Request{Method: http.MethodPut, Path: path, Token: admin, JSON: map[string]any{}}, Status: http.StatusBadRequest, Code: "validation_failed"},
		{Name: "put400malformed", Req: Request{Method: http.MethodPut, Path: path, Token: admin, JSON: `{"logging":`}, Status: http.StatusBadRequest, Code: "bad_request"},
		{Name: "put400type", Req: Request{Method: http.MethodPut, Path: path, Token: admin, JSON: `{"logging":{"level":5}}`}, Status: http.StatusBadRequest, Code: "validation_failed"},
		{Name: "put200", Req: Request{Method: http.MethodPut, Path: path, Token: admin, JSON: map[string]any{"logging": map[string]any{"level": "debug", "filter": "files, loads:*,-loads:import"}}}, Status: http.StatusOK,
			Check: func(t *testing.T, r *Response) {
				var doc struct {
					Status, Message string
					Logging         struct{ Level, Filter string }
				}
				r.Decode(t, &doc)
				if doc.Status != "success" || doc.Message == "" || doc.Logging.Level != "debug" || doc.Logging.Filter != "files,loads:*,-loads:import" {
					t.Fatalf("answer %s, want the confirmation with the applied settings", r.Body)
				}
				if got := s.Platform.Logs.Module(module).Settings().Level; got != "debug" {
					t.Fatalf("module logger level %s, want debug", got)
				}
				if other != "" {
					if got := s.Platform.Logs.Module(other).Settings(); got.Filter != "" {
						t.Fatalf("the change leaked to module %s: %+v", other, got)
					}
				}
				if r.Header.Get("X-API-Version") != module+"/1.0.0" {
					t.Fatalf("X-API-Version %q", r.Header.Get("X-API-Version"))
				}
			}},
		{Name: "get200", Req: Request{Method: http.MethodGet, Path: path, Token: admin}, Status: http.StatusOK,
			Check: func(t *testing.T, r *Response) {
				var doc struct {
					Logging struct{ Level, Filter string }
				}
				r.Decode(t, &doc)
				if doc.Logging.Level != "debug" || doc.Logging.Filter != "files,loads:*,-loads:import" {
					t.Fatalf("answer %s", r.Body)
				}
			}},
		{Name: "put200levelOnlyKeepsFilter", Req: Request{Method: http.MethodPut, Path: path, Token: admin, JSON: map[string]any{"logging": map[string]any{"level": "warn"}}}, Status: http.StatusOK,
			Check: func(t *testing.T, r *Response) {
				var doc struct {
					Logging struct{ Level, Filter string }
				}
				r.Decode(t, &doc)
				if doc.Logging.Level != "warn" || doc.Logging.Filter != "files,loads:*,-loads:import" {
					t.Fatalf("answer %s", r.Body)
				}
			}},
	})
}
