// Package auth turns bearer tokens into principals and guards routes with them.
//
// Two modes: HS256 with a shared secret (the embedded default, the secret kept in
// the data directory) or OIDC, where RS/ES/PS-signed tokens are checked against
// the provider's JWKS with issuer and audience. The same secret also signs
// expiring URLs (file downloads) in both modes.
package auth

import (
	"slices"
	"time"

	"github.com/gin-gonic/gin"
)

// The roles API.md names.
const (
	RoleAdmin  = "admin"
	RoleExpert = "expert"
	RoleDriver = "driver"
)

// Principal is the authenticated caller.
type Principal struct {
	UserID  string   `json:"sub"`
	Name    string   `json:"name"`
	OrgID   string   `json:"org"`
	OrgName string   `json:"orgName"`
	Orgs    []string `json:"orgs"`
	Roles   []string `json:"roles"`
	// ExpiresAt is the token's exp (zero when unknown): long-lived
	// connections such as the event stream end there.
	ExpiresAt time.Time `json:"-"`
}

// HasRole tells whether the principal holds a role.
func (p *Principal) HasRole(role string) bool {
	return p != nil && slices.Contains(p.Roles, role)
}

// IsAdmin tells whether the principal is an administrator.
func (p *Principal) IsAdmin() bool { return p.HasRole(RoleAdmin) }

// MemberOf tells whether the principal belongs to an organisation: its current
// one or any listed in its orgs claim.
func (p *Principal) MemberOf(org string) bool {
	if p == nil || org == "" {
		return false
	}
	return p.OrgID == org || slices.Contains(p.Orgs, org)
}

// Organisations lists every organisation of the principal, current first, without duplicates.
func (p *Principal) Organisations() []string {
	if p == nil {
		return nil
	}
	out := make([]string, 0, len(p.Orgs)+1)
	if p.OrgID != "" {
		out = append(out, p.OrgID)
	}
	for _, o := range p.Orgs {
		if o != "" && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

const principalKey = "auth.principal"

// FromContext returns the principal of the request, or nil for anonymous calls.
func FromContext(c *gin.Context) *Principal {
	if v, ok := c.Get(principalKey); ok {
		if p, ok := v.(*Principal); ok {
			return p
		}
	}
	return nil
}

// WithPrincipal stores the principal in the request context.
func WithPrincipal(c *gin.Context, p *Principal) { c.Set(principalKey, p) }
