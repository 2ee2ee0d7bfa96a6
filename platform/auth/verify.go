package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agritrade/api/platform/config"
	"github.com/golang-jwt/jwt/v5"
)

type hsVerifier struct {
	secret   []byte
	issuer   string
	audience string
	claims   config.ClaimNames
	leeway   time.Duration
}

func (v *hsVerifier) Verify(_ context.Context, raw string) (*Principal, error) {
	opts := parserOptions([]string{"HS256"}, v.issuer, v.audience, v.leeway)
	tok, err := jwt.Parse(raw, func(*jwt.Token) (any, error) { return v.secret, nil }, opts...)
	if err != nil {
		return nil, err
	}
	return principalFrom(tok, v.claims)
}

type oidcVerifier struct {
	jwks     *JWKS
	issuer   string
	audience string
	claims   config.ClaimNames
	leeway   time.Duration
}

func (v *oidcVerifier) Verify(ctx context.Context, raw string) (*Principal, error) {
	algs := []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}
	opts := parserOptions(algs, v.issuer, v.audience, v.leeway)
	tok, err := jwt.Parse(raw, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		return v.jwks.Key(ctx, kid)
	}, opts...)
	if err != nil {
		return nil, err
	}
	return principalFrom(tok, v.claims)
}

// parserOptions are the checks of both modes. leeway is the clock skew
// tolerated on exp, nbf and iat: a token issued (iat) or valid from (nbf)
// further in the future is refused, as one expired longer ago is.
func parserOptions(algs []string, issuer, audience string, leeway time.Duration) []jwt.ParserOption {
	opts := []jwt.ParserOption{jwt.WithValidMethods(algs), jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(leeway)}
	if issuer != "" {
		opts = append(opts, jwt.WithIssuer(issuer))
	}
	if audience != "" {
		opts = append(opts, jwt.WithAudience(audience))
	}
	return opts
}

// errNoSubject refuses a token that names no user.
var errNoSubject = errors.New("token has no sub claim")

// Problem says in a few words why a token was refused: the error_description
// of the 401's challenge. It names the failed check, never the token's content.
func Problem(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "the token is malformed"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "the token signature is invalid"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "the token has expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "the token is not valid yet (nbf)"
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "the token is issued in the future (iat)"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "the token issuer is not accepted"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "the token audience is not accepted"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing), errors.Is(err, errNoSubject):
		return "the token lacks a required claim"
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "the token cannot be verified (algorithm or signing key)"
	case errors.Is(err, errClaimText):
		return "a claim holds a NUL character or bytes that are not UTF-8"
	default:
		return "the token is not valid"
	}
}

// errClaimText is a claim holding a NUL character or bytes that are not UTF-8.
var errClaimText = errors.New("a claim holds text that cannot be stored")

func principalFrom(tok *jwt.Token, names config.ClaimNames) (*Principal, error) {
	claims, ok := tok.Claims.(jwt.MapClaims)
	if !ok {
		return nil, errors.New("unexpected claims type")
	}
	sub, _ := claims["sub"].(string)
	if sub == "" {
		return nil, errNoSubject
	}
	p := &Principal{
		UserID:  sub,
		Name:    stringClaim(claims, names.Name),
		OrgID:   stringClaim(claims, names.Org),
		OrgName: stringClaim(claims, names.OrgName),
		Orgs:    listClaim(claims, names.Orgs),
		Roles:   listClaim(claims, names.Roles),
	}
	if p.OrgID == "" && len(p.Orgs) > 0 {
		p.OrgID = p.Orgs[0]
	}
	// Claims end up stored (creators, names of parties): a signed token is
	// still not allowed to carry text the database refuses.
	for _, c := range append([]string{p.UserID, p.Name, p.OrgID, p.OrgName}, append(p.Orgs, p.Roles...)...) {
		if strings.IndexByte(c, 0) >= 0 || !utf8.ValidString(c) {
			return nil, errClaimText
		}
	}
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		p.ExpiresAt = exp.Time
	}
	return p, nil
}

// lookup follows a dotted claim path such as "realm_access.roles".
func lookup(claims map[string]any, path string) any {
	if path == "" {
		return nil
	}
	var cur any = claims
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

func stringClaim(claims map[string]any, path string) string {
	switch v := lookup(claims, path).(type) {
	case string:
		return v
	case float64:
		return fmt.Sprint(v)
	default:
		return ""
	}
}

// listClaim accepts an array of strings or one comma-separated string.
func listClaim(claims map[string]any, path string) []string {
	switch v := lookup(claims, path).(type) {
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	case string:
		var out []string
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	default:
		return nil
	}
}
