package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/config"
	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"
)

// Verifier turns a raw bearer token into a principal.
type Verifier interface {
	Verify(ctx context.Context, token string) (*Principal, error)
}

// Service verifies tokens and signs URLs for one configuration.
type Service struct {
	verifier Verifier
	jwks     *JWKS
	secret   []byte
	claims   config.ClaimNames
	Signer   *Signer
	verified *verifiedCache
}

// SecretFile is the name of the generated HS256 secret inside the data directory.
const SecretFile = "auth.secret"

// New builds the service. With no configured secret, the secret is read from
// (or generated into) the data directory, so that restarts keep tokens valid.
func New(cfg *config.Config) (*Service, error) {
	secret, err := LoadOrCreateSecret(cfg.Auth.Secret, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	s := &Service{secret: secret, claims: cfg.Auth.Claims, Signer: NewSigner(secret), verified: newVerifiedCache(cfg.Auth.Leeway)}
	if cfg.Auth.JWKSURL != "" {
		s.jwks = NewJWKS(cfg.Auth.JWKSURL, nil)
		s.verifier = &oidcVerifier{jwks: s.jwks, issuer: cfg.Auth.Issuer, audience: cfg.Auth.Audience, claims: cfg.Auth.Claims, leeway: cfg.Auth.Leeway}
	} else {
		s.verifier = &hsVerifier{secret: secret, issuer: cfg.Auth.Issuer, audience: cfg.Auth.Audience, claims: cfg.Auth.Claims, leeway: cfg.Auth.Leeway}
	}
	return s, nil
}

// Secret returns the HS256 secret (for minting development tokens).
func (s *Service) Secret() []byte { return s.secret }

// Verify checks a token and returns its principal: from the cache of tokens
// verified before while they are valid, else by verifying it.
func (s *Service) Verify(ctx context.Context, token string) (*Principal, error) {
	if p, ok := s.verified.get(token); ok {
		return p, nil
	}
	p, err := s.verifier.Verify(ctx, token)
	if err != nil {
		return nil, err
	}
	s.verified.put(token, p)
	return p, nil
}

// ReloadKeys forgets the tokens verified so far and drops cached signing keys
// (JWKS) so that the next token fetches them anew.
func (s *Service) ReloadKeys(ctx context.Context) error {
	s.verified.clear()
	if s.jwks == nil {
		return nil
	}
	return s.jwks.Refresh(ctx)
}

// LoadOrCreateSecret returns the configured secret's UTF-8 bytes, or the secret
// kept in dataDir, generating it (0600) on first use. Processes that start
// together on one data dir agree on one secret: the secret is written to a
// temporary file and published with link(2), which fails when another process
// published first (then its secret is read), so the file is never seen empty
// or half written, and a start killed at any moment leaves nothing in the way.
func LoadOrCreateSecret(configured, dataDir string) ([]byte, error) {
	if configured != "" {
		return []byte(configured), nil
	}
	path := filepath.Join(dataDir, SecretFile)
	for attempt := 0; ; attempt++ {
		b, err := os.ReadFile(path)
		switch {
		case err == nil && strings.TrimSpace(string(b)) != "":
			return []byte(strings.TrimSpace(string(b))), nil
		case err == nil:
			// Empty: earlier versions created the file before filling it, so a
			// process killed in between left it so. Give a live writer a moment,
			// then replace it.
			if info, serr := os.Stat(path); serr == nil && time.Since(info.ModTime()) < time.Minute && attempt < 100 {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("replace empty auth secret: %w", err)
			}
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("read auth secret: %w", err)
		}
		secret, err := publishSecret(dataDir, path)
		if errors.Is(err, os.ErrExist) {
			continue // another process published first: use theirs
		}
		return secret, err
	}
}

func publishSecret(dataDir, path string) ([]byte, error) {
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	raw := make([]byte, 48)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	secret := base64.RawURLEncoding.EncodeToString(raw)
	f, err := os.CreateTemp(dataDir, ".auth.secret-*")
	if err != nil {
		return nil, fmt.Errorf("create auth secret: %w", err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	if _, err := f.WriteString(secret + "\n"); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("write auth secret: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("write auth secret: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write auth secret: %w", err)
	}
	if err := os.Link(f.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, err
		}
		return nil, fmt.Errorf("publish auth secret: %w", err)
	}
	return []byte(secret), nil
}

// Middleware reads the bearer token when one is sent: a bad token answers 401
// even on public routes, no token leaves the request anonymous. Every 401
// about a token that was sent says why in its WWW-Authenticate challenge.
func (s *Service) Middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.GetHeader("Authorization")
		if h == "" {
			c.Next()
			return
		}
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			apierr.Render(c, apierr.InvalidToken(nil, "the Authorization header must be 'Bearer <token>'"))
			return
		}
		p, err := s.Verify(c.Request.Context(), strings.TrimSpace(token))
		if err != nil {
			apierr.Render(c, apierr.InvalidToken(err, Problem(err)))
			return
		}
		WithPrincipal(c, p)
		c.Next()
	}
}

// RequireAuth answers 401 for anonymous calls.
func RequireAuth() gin.HandlerFunc {
	return func(c *gin.Context) {
		if FromContext(c) == nil {
			apierr.Render(c, apierr.Unauthorized("this operation needs a bearer token"))
			return
		}
		c.Next()
	}
}

// RequireRole answers 401 for anonymous calls and 403 without the role.
func RequireRole(role string) gin.HandlerFunc {
	return func(c *gin.Context) {
		p := FromContext(c)
		if p == nil {
			apierr.Render(c, apierr.Unauthorized("this operation needs a bearer token"))
			return
		}
		if !p.HasRole(role) {
			apierr.Render(c, apierr.Forbidden("this operation needs the %s role", role))
			return
		}
		c.Next()
	}
}

// MintOptions describe a token to mint.
type MintOptions struct {
	Principal Principal
	TTL       time.Duration // negative mints an already expired token
	Issuer    string
	Audience  string
	Now       time.Time
}

// Mint signs an HS256 token for a principal with the standard claim names.
func Mint(secret []byte, o MintOptions) (string, error) {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	if o.TTL == 0 {
		o.TTL = time.Hour
	}
	claims := jwt.MapClaims{
		"sub":   o.Principal.UserID,
		"name":  o.Principal.Name,
		"org":   o.Principal.OrgID,
		"iat":   now.Unix(),
		"nbf":   now.Add(-time.Minute).Unix(),
		"exp":   now.Add(o.TTL).Unix(),
		"roles": nonNil(o.Principal.Roles),
		"orgs":  nonNil(o.Principal.Orgs),
	}
	if o.TTL < 0 {
		claims["iat"] = now.Add(o.TTL - time.Minute).Unix()
		claims["nbf"] = now.Add(o.TTL - time.Minute).Unix()
	}
	if o.Principal.OrgName != "" {
		claims["orgName"] = o.Principal.OrgName
	}
	if o.Issuer != "" {
		claims["iss"] = o.Issuer
	}
	if o.Audience != "" {
		claims["aud"] = o.Audience
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
