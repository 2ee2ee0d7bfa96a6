package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/golang-jwt/jwt/v5"
)

func hsConfig(t *testing.T) *config.Config {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Auth.Secret = "s3cret"
	return cfg
}

func TestHS256RoundTrip(t *testing.T) {
	svc, err := auth.New(hsConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	p := auth.Principal{UserID: "U1", Name: "Ann Smith", OrgID: "O1", OrgName: "Smith Farms", Orgs: []string{"O1", "O2"}, Roles: []string{"admin"}}
	tok, err := auth.Mint(svc.Secret(), auth.MintOptions{Principal: p, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	got, err := svc.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if got.UserID != "U1" || got.Name != "Ann Smith" || got.OrgName != "Smith Farms" || !got.MemberOf("O2") || !got.IsAdmin() || got.MemberOf("O3") {
		t.Fatalf("principal %+v", got)
	}
	expired, _ := auth.Mint(svc.Secret(), auth.MintOptions{Principal: p, TTL: -time.Hour})
	if _, err := svc.Verify(context.Background(), expired); err == nil {
		t.Fatal("expired token accepted")
	}
	other, _ := auth.Mint([]byte("other"), auth.MintOptions{Principal: p})
	if _, err := svc.Verify(context.Background(), other); err == nil {
		t.Fatal("token signed with another secret accepted")
	}
	none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "U1", "exp": time.Now().Add(time.Hour).Unix()})
	raw, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	if _, err := svc.Verify(context.Background(), raw); err == nil {
		t.Fatal("alg=none accepted")
	}
	noExp := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "U1"})
	raw, _ = noExp.SignedString(svc.Secret())
	if _, err := svc.Verify(context.Background(), raw); err == nil {
		t.Fatal("token without exp accepted")
	}
}

func TestSecretGeneratedOnceAndKept(t *testing.T) {
	dir := t.TempDir()
	a, err := auth.LoadOrCreateSecret("", dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := auth.LoadOrCreateSecret("", dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) || len(a) < 32 {
		t.Fatalf("secret not kept: %q vs %q", a, b)
	}
	st, err := os.Stat(filepath.Join(dir, auth.SecretFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret file mode %v %v", st, err)
	}
	if c, _ := auth.LoadOrCreateSecret("configured", dir); string(c) != "configured" {
		t.Fatal("configured secret not used as given")
	}
}

func TestSignerRejectsTamperingAndExpiry(t *testing.T) {
	s := auth.NewSigner([]byte("k"))
	now := time.Unix(1_800_000_000, 0)
	tok := s.Sign("files/abc", now.Add(time.Minute))
	if err := s.Verify("files/abc", tok, now); err != nil {
		t.Fatal(err)
	}
	for name, check := range map[string]error{
		"other resource": s.Verify("files/abd", tok, now),
		"expired":        s.Verify("files/abc", tok, now.Add(2*time.Minute)),
		"tampered":       s.Verify("files/abc", tok[:len(tok)-1]+"A", now),
		"extended":       s.Verify("files/abc", "9999999999"+tok[10:], now),
		"garbage":        s.Verify("files/abc", "x", now),
		"other key":      auth.NewSigner([]byte("j")).Verify("files/abc", tok, now),
	} {
		if check == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// jwksServer serves an RSA and an EC key and counts fetches.
type jwksServer struct {
	*httptest.Server
	rsa     *rsa.PrivateKey
	ec      *ecdsa.PrivateKey
	fetches atomic.Int32
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func newJWKS(t *testing.T) *jwksServer {
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	j := &jwksServer{rsa: rk, ec: ek}
	j.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		j.fetches.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{
			{"kty": "RSA", "kid": "rsa-1", "use": "sig", "alg": "RS256", "n": b64(rk.N.Bytes()), "e": b64(big.NewInt(int64(rk.E)).Bytes())},
			{"kty": "EC", "kid": "ec-1", "use": "sig", "crv": "P-256", "x": b64(ek.X.FillBytes(make([]byte, 32))), "y": b64(ek.Y.FillBytes(make([]byte, 32)))},
			{"kty": "oct", "kid": "ignored", "k": "AAAA"},
		}})
	}))
	t.Cleanup(j.Close)
	return j
}

func oidcToken(t *testing.T, method jwt.SigningMethod, kid string, key any, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOIDCWithJWKS(t *testing.T) {
	j := newJWKS(t)
	cfg := hsConfig(t)
	cfg.Auth.JWKSURL = j.URL
	cfg.Auth.Issuer = "https://id.example.com/realms/agri"
	cfg.Auth.Audience = "agritrade-api"
	cfg.Auth.Claims.Roles = "realm_access.roles"
	svc, err := auth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := func() jwt.MapClaims {
		return jwt.MapClaims{"sub": "kc-user", "iss": cfg.Auth.Issuer, "aud": "agritrade-api", "exp": time.Now().Add(time.Hour).Unix(),
			"name": "Kay Cloak", "org": "O9", "orgs": "O9,O10", "realm_access": map[string]any{"roles": []string{"expert"}}}
	}
	ctx := context.Background()
	p, err := svc.Verify(ctx, oidcToken(t, jwt.SigningMethodRS256, "rsa-1", j.rsa, base()))
	if err != nil {
		t.Fatal(err)
	}
	if p.UserID != "kc-user" || !p.HasRole("expert") || !p.MemberOf("O10") {
		t.Fatalf("principal %+v", p)
	}
	if _, err := svc.Verify(ctx, oidcToken(t, jwt.SigningMethodES256, "ec-1", j.ec, base())); err != nil {
		t.Fatalf("ES256: %v", err)
	}
	wrongIss := base()
	wrongIss["iss"] = "https://evil.example.com"
	wrongAud := base()
	wrongAud["aud"] = "other-api"
	for name, tok := range map[string]string{
		"issuer":   oidcToken(t, jwt.SigningMethodRS256, "rsa-1", j.rsa, wrongIss),
		"audience": oidcToken(t, jwt.SigningMethodRS256, "rsa-1", j.rsa, wrongAud),
		"hs256":    oidcToken(t, jwt.SigningMethodHS256, "rsa-1", []byte("s3cret"), base()),
		"kid":      oidcToken(t, jwt.SigningMethodRS256, "unknown", j.rsa, base()),
	} {
		if _, err := svc.Verify(ctx, tok); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	before := j.fetches.Load()
	if err := svc.ReloadKeys(ctx); err != nil || j.fetches.Load() != before+1 {
		t.Fatalf("reload did not refetch: %v", err)
	}
}

func FuzzVerify(f *testing.F) {
	svc, err := auth.New(&config.Config{DataDir: f.TempDir(), Auth: config.Auth{Secret: "s3cret", Claims: config.Default().Auth.Claims}})
	if err != nil {
		f.Fatal(err)
	}
	good, _ := auth.Mint(svc.Secret(), auth.MintOptions{Principal: auth.Principal{UserID: "U1"}})
	for _, s := range []string{good, "", "a.b.c", "eyJhbGciOiJub25lIn0.e30.", good + "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		p, err := svc.Verify(context.Background(), tok)
		if err == nil && (p == nil || p.UserID == "") {
			t.Fatalf("accepted a token without a subject: %q", tok)
		}
	})
}

// A signed token whose claims hold text the database refuses is refused
// (401), never carried into a write.
func TestVerify_401_ClaimWithNUL(t *testing.T) {
	svc, err := auth.New(hsConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []auth.Principal{
		{UserID: "U1\x00", OrgID: "O1"},
		{UserID: "U1", Name: "Ann\x00Smith", OrgID: "O1"},
		{UserID: "U1", OrgID: "O1", Orgs: []string{"O1", "O\x002"}},
	} {
		tok, err := auth.Mint(svc.Secret(), auth.MintOptions{Principal: p, TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		_, err = svc.Verify(context.Background(), tok)
		if err == nil || auth.Problem(err) != "a claim holds a NUL character or bytes that are not UTF-8" {
			t.Errorf("%+v: %v (%s)", p, err, auth.Problem(err))
		}
	}
}
