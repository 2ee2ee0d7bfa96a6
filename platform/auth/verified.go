package auth

import (
	"sync"
	"time"
)

// verifiedCache remembers the principals of tokens that passed verification,
// so that the next request with the same token is checked against the cache
// instead of parsing the JWT and checking its signature again (a fifth of the
// CPU of a cheap read in a profile). Only tokens that verified are kept, so no
// caller can fill it with garbage; an entry lasts until the token expires (as
// verification would accept it, leeway included) and at most maxAge, which
// bounds how long a token of a signing key that has since left the JWKS is
// still accepted. Clear empties it (cache clear with secrets: true).
type verifiedCache struct {
	mu      sync.RWMutex
	entries map[string]verifiedEntry
	max     int
	maxAge  time.Duration
	leeway  time.Duration
	now     func() time.Time
}

type verifiedEntry struct {
	p     Principal
	until time.Time
}

const (
	verifiedMax    = 10000
	verifiedMaxAge = 5 * time.Minute
)

func newVerifiedCache(leeway time.Duration) *verifiedCache {
	return &verifiedCache{entries: map[string]verifiedEntry{}, max: verifiedMax, maxAge: verifiedMaxAge, leeway: leeway, now: time.Now}
}

// get answers a copy of the principal of a token verified before and still valid.
func (c *verifiedCache) get(token string) (*Principal, bool) {
	c.mu.RLock()
	e, ok := c.entries[token]
	c.mu.RUnlock()
	if !ok || !c.now().Before(e.until) {
		return nil, false
	}
	p := e.p
	return &p, true
}

// put keeps p for token; a full cache first drops expired entries, then, if
// still full, an arbitrary tenth (map order), so memory stays bounded.
func (c *verifiedCache) put(token string, p *Principal) {
	now := c.now()
	until := now.Add(c.maxAge)
	if exp := p.ExpiresAt.Add(c.leeway); !p.ExpiresAt.IsZero() && exp.Before(until) {
		until = exp
	}
	if !now.Before(until) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.until) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < c.max-c.max/10 {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[token] = verifiedEntry{p: *p, until: until}
}

// clear forgets every token.
func (c *verifiedCache) clear() {
	c.mu.Lock()
	c.entries = map[string]verifiedEntry{}
	c.mu.Unlock()
}
