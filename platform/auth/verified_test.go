package auth

import (
	"context"
	"testing"
	"time"

	"github.com/agritrade/api/platform/config"
	"github.com/golang-jwt/jwt/v5"
)

// TestVerify_CachedTokenAnswersUntilItExpires: a verified token is answered
// from the cache (the verifier is not asked again), its principal is a copy,
// and at its expiry plus leeway (or after maxAge) it is verified again.
func TestVerify_CachedTokenAnswersUntilItExpires(t *testing.T) {
	cfg := &config.Config{DataDir: t.TempDir(), Auth: config.Auth{Secret: "cache-secret", Claims: config.Default().Auth.Claims, Leeway: 10 * time.Second}}
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	svc.verified.now = func() time.Time { return now }
	exp := now.Add(2 * time.Minute).Truncate(time.Second)
	raw, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "U1", "orgs": []string{"O1"}, "exp": exp.Unix()}).SignedString(svc.Secret())
	if err != nil {
		t.Fatal(err)
	}
	counting := &countingVerifier{Verifier: svc.verifier}
	svc.verifier = counting
	ctx := context.Background()
	for i := range 3 {
		p, err := svc.Verify(ctx, raw)
		if err != nil {
			t.Fatalf("verify %d: %v", i, err)
		}
		if p.UserID != "U1" || p.OrgID != "O1" {
			t.Fatalf("verify %d: principal %+v", i, p)
		}
		p.UserID = "changed by a caller"
	}
	if counting.calls != 1 {
		t.Fatalf("the verifier was asked %d times for one token, want 1", counting.calls)
	}
	// Just before exp+leeway: still cached. At it: the cache misses and the
	// verifier decides again (it runs on the real clock, so here it accepts;
	// the refusal of expired tokens is the verifier's, tested in tokens_test).
	now = exp.Add(10*time.Second - time.Millisecond)
	if _, err := svc.Verify(ctx, raw); err != nil || counting.calls != 1 {
		t.Fatalf("before exp+leeway: err %v, verifier calls %d; want cached", err, counting.calls)
	}
	now = exp.Add(10 * time.Second)
	if _, err := svc.Verify(ctx, raw); counting.calls != 2 {
		t.Fatalf("at exp+leeway: err %v, verifier calls %d; want verified again", err, counting.calls)
	}
	// A token verified now lasts at most maxAge in the cache.
	if err := svc.ReloadKeys(ctx); err != nil {
		t.Fatal(err)
	}
	now = time.Now()
	counting.calls = 0
	_, _ = svc.Verify(ctx, raw)
	now = now.Add(verifiedMaxAge)
	_, _ = svc.Verify(ctx, raw)
	if counting.calls != 2 {
		t.Fatalf("after maxAge: verifier calls %d, want 2", counting.calls)
	}
}

// TestVerify_401_RefusedTokensAreNotCached: a token that fails is asked of
// the verifier every time, and ReloadKeys empties the cache.
func TestVerify_401_RefusedTokensAreNotCached(t *testing.T) {
	svc, err := New(&config.Config{DataDir: t.TempDir(), Auth: config.Auth{Secret: "cache-secret", Claims: config.Default().Auth.Claims}})
	if err != nil {
		t.Fatal(err)
	}
	counting := &countingVerifier{Verifier: svc.verifier}
	svc.verifier = counting
	bad, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "U1", "exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte("another secret"))
	for range 2 {
		if _, err := svc.Verify(context.Background(), bad); err == nil {
			t.Fatal("a token signed with another secret was accepted")
		}
	}
	if counting.calls != 2 {
		t.Fatalf("verifier calls %d for a refused token asked twice, want 2", counting.calls)
	}
	good, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "U1", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(svc.Secret())
	_, _ = svc.Verify(context.Background(), good)
	if err := svc.ReloadKeys(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, _ = svc.Verify(context.Background(), good)
	if counting.calls != 4 {
		t.Fatalf("verifier calls %d, want 4 (the cache emptied by ReloadKeys)", counting.calls)
	}
}

// TestVerifiedCache_StaysBounded: past max entries the cache drops some.
func TestVerifiedCache_StaysBounded(t *testing.T) {
	c := newVerifiedCache(0)
	c.max = 100
	p := &Principal{UserID: "U", ExpiresAt: time.Now().Add(time.Hour)}
	for i := range 1000 {
		c.put(string(rune('a'+i%26))+time.Duration(i).String(), p)
	}
	if n := len(c.entries); n > 100 {
		t.Fatalf("%d entries, want at most 100", n)
	}
}

type countingVerifier struct {
	Verifier
	calls int
}

func (v *countingVerifier) Verify(ctx context.Context, raw string) (*Principal, error) {
	v.calls++
	return v.Verifier.Verify(ctx, raw)
}
