package auth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"
)

// timeCases are tokens whose iat or nbf lie in the future: beyond the minute
// of leeway they are refused with the claim named, within it accepted (clock
// skew between the identity provider and the API).
func timeCases() []struct {
	name    string
	claims  func(c jwt.MapClaims)
	problem string // "" when accepted
} {
	now := time.Now()
	return []struct {
		name    string
		claims  func(c jwt.MapClaims)
		problem string
	}{
		{"iat 5 min ahead", func(c jwt.MapClaims) { c["iat"] = now.Add(5 * time.Minute).Unix() }, "the token is issued in the future (iat)"},
		{"iat 2 min ahead", func(c jwt.MapClaims) { c["iat"] = now.Add(2 * time.Minute).Unix() }, "the token is issued in the future (iat)"},
		{"nbf 5 min ahead", func(c jwt.MapClaims) { c["nbf"] = now.Add(5 * time.Minute).Unix() }, "the token is not valid yet (nbf)"},
		{"iat and nbf a day ahead", func(c jwt.MapClaims) {
			c["iat"], c["nbf"] = now.Add(24*time.Hour).Unix(), now.Add(24*time.Hour).Unix()
		}, "the token is not valid yet (nbf)"},
		{"iat 20 s ahead (skew)", func(c jwt.MapClaims) { c["iat"] = now.Add(20 * time.Second).Unix() }, ""},
		{"nbf 20 s ahead (skew)", func(c jwt.MapClaims) { c["nbf"] = now.Add(20 * time.Second).Unix() }, ""},
		{"iat and nbf now", func(c jwt.MapClaims) { c["iat"], c["nbf"] = now.Unix(), now.Unix() }, ""},
		{"expired 2 min ago", func(c jwt.MapClaims) { c["exp"] = now.Add(-2 * time.Minute).Unix() }, "the token has expired"},
	}
}

func TestFutureTokensHS256(t *testing.T) {
	svc, err := auth.New(hsConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range timeCases() {
		claims := jwt.MapClaims{"sub": "U1", "exp": time.Now().Add(time.Hour).Unix()}
		c.claims(claims)
		raw, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(svc.Secret())
		if err != nil {
			t.Fatal(err)
		}
		checkVerdict(t, svc, c.name, raw, c.problem)
	}
}

func TestFutureTokensOIDC(t *testing.T) {
	j := newJWKS(t)
	cfg := hsConfig(t)
	cfg.Auth.JWKSURL = j.URL
	cfg.Auth.Issuer = "https://id.example.com/realms/agri"
	cfg.Auth.Audience = "agritrade-api"
	svc, err := auth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range timeCases() {
		claims := jwt.MapClaims{"sub": "kc-user", "iss": cfg.Auth.Issuer, "aud": "agritrade-api", "exp": time.Now().Add(time.Hour).Unix()}
		c.claims(claims)
		checkVerdict(t, svc, "RS256 "+c.name, oidcToken(t, jwt.SigningMethodRS256, "rsa-1", j.rsa, claims), c.problem)
		checkVerdict(t, svc, "ES256 "+c.name, oidcToken(t, jwt.SigningMethodES256, "ec-1", j.ec, claims), c.problem)
	}
}

func checkVerdict(t *testing.T, svc *auth.Service, name, raw, problem string) {
	t.Helper()
	_, err := svc.Verify(context.Background(), raw)
	switch {
	case problem == "" && err != nil:
		t.Errorf("%s: refused: %v", name, err)
	case problem != "" && err == nil:
		t.Errorf("%s: accepted", name)
	case problem != "" && auth.Problem(err) != problem:
		t.Errorf("%s: problem %q, want %q (%v)", name, auth.Problem(err), problem, err)
	}
}

// TestChallenges: every 401 carries a Bearer challenge (RFC 6750), with
// error="invalid_token" and a short description exactly when a token was sent,
// whether the route needs a token or not and whichever layer refuses.
func TestChallenges(t *testing.T) {
	gin.SetMode(gin.TestMode)
	svc, err := auth.New(hsConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	e := gin.New()
	e.Use(apierr.Middleware(apierr.RenderOptions{}), svc.Middleware())
	e.GET("/private", auth.RequireAuth(), func(c *gin.Context) { c.Status(http.StatusNoContent) })
	e.GET("/admin", auth.RequireRole(auth.RoleAdmin), func(c *gin.Context) { c.Status(http.StatusNoContent) })
	e.GET("/public", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	e.GET("/signed", func(c *gin.Context) { apierr.Render(c, apierr.Unauthorized("the download token is not valid")) })

	p := auth.Principal{UserID: "U1", OrgID: "O1", Orgs: []string{"O1"}}
	good, _ := auth.Mint(svc.Secret(), auth.MintOptions{Principal: p, TTL: time.Hour})
	expired, _ := auth.Mint(svc.Secret(), auth.MintOptions{Principal: p, TTL: -time.Hour})
	future, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "U1", "iat": time.Now().Add(10 * time.Minute).Unix(), "exp": time.Now().Add(time.Hour).Unix()}).SignedString(svc.Secret())
	bare := `Bearer realm="agritrade"`
	invalid := func(desc string) string {
		return `Bearer realm="agritrade", error="invalid_token", error_description="` + desc + `"`
	}
	for _, c := range []struct {
		name, path, authz string
		status            int
		challenge         string
	}{
		{"no token", "/private", "", 401, bare},
		{"no token, admin route", "/admin", "", 401, bare},
		{"no token, handler's own 401", "/signed", "", 401, bare},
		{"expired", "/private", "Bearer " + expired, 401, invalid("the token has expired")},
		{"issued in the future", "/private", "Bearer " + future, 401, invalid("the token is issued in the future (iat)")},
		{"bad signature", "/private", "Bearer " + good + "x", 401, invalid("the token signature is invalid")},
		{"garbage", "/private", "Bearer abc", 401, invalid("the token is malformed")},
		{"other scheme", "/private", "Basic dTpw", 401, invalid("the Authorization header must be 'Bearer <token>'")},
		{"empty bearer", "/private", "Bearer ", 401, invalid("the Authorization header must be 'Bearer <token>'")},
		{"bad token on a public route", "/public", "Bearer " + expired, 401, invalid("the token has expired")},
		{"valid", "/private", "Bearer " + good, 204, ""},
		{"valid without the role", "/admin", "Bearer " + good, 403, ""},
		{"public, no token", "/public", "", 204, ""},
	} {
		req := httptest.NewRequest(http.MethodGet, c.path, nil)
		if c.authz != "" {
			req.Header.Set("Authorization", c.authz)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != c.status {
			t.Errorf("%s: status %d, want %d (%s)", c.name, rec.Code, c.status, rec.Body)
			continue
		}
		if got := rec.Header().Get("WWW-Authenticate"); got != c.challenge {
			t.Errorf("%s: WWW-Authenticate %q, want %q", c.name, got, c.challenge)
		}
		if c.status == 401 && !strings.Contains(rec.Body.String(), `"code":"unauthorized"`) {
			t.Errorf("%s: body %s", c.name, rec.Body)
		}
	}
}

func TestChallengeQuoting(t *testing.T) {
	got := apierr.Challenge("a \"quoted\" \\ reason\n\x00é")
	if want := `Bearer realm="agritrade", error="invalid_token", error_description="a quoted  reason"`; got != want {
		t.Fatalf("challenge %q, want %q", got, want)
	}
}
