package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"sync"
	"time"
)

// JWKS keeps the signing keys of an OIDC provider, fetched from its JWKS URL
// and refreshed when a token names a key it does not know (key rotation), at
// most once per minRefresh.
type JWKS struct {
	url        string
	client     *http.Client
	mu         sync.RWMutex
	keys       map[string]any
	fetched    time.Time
	minRefresh time.Duration
	maxAge     time.Duration
}

// NewJWKS makes a key set for url; client may be nil.
func NewJWKS(url string, client *http.Client) *JWKS {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	return &JWKS{url: url, client: client, keys: map[string]any{}, minRefresh: time.Minute, maxAge: time.Hour}
}

// Key returns the public key with the given id, fetching the set when needed.
func (j *JWKS) Key(ctx context.Context, kid string) (any, error) {
	j.mu.RLock()
	key, ok := j.keys[kid]
	stale := time.Since(j.fetched) > j.maxAge
	canRefresh := time.Since(j.fetched) > j.minRefresh
	j.mu.RUnlock()
	if ok && !stale {
		return key, nil
	}
	if !ok && !canRefresh && !j.fetched.IsZero() {
		return nil, fmt.Errorf("unknown signing key %q", kid)
	}
	if err := j.Refresh(ctx); err != nil {
		if ok {
			return key, nil // keep serving with the last good set while the provider is down
		}
		return nil, err
	}
	j.mu.RLock()
	defer j.mu.RUnlock()
	if key, ok := j.keys[kid]; ok {
		return key, nil
	}
	if kid == "" && len(j.keys) == 1 {
		for _, k := range j.keys {
			return k, nil
		}
	}
	return nil, fmt.Errorf("unknown signing key %q", kid)
}

type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// Refresh fetches the key set now.
func (j *JWKS) Refresh(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.url, nil)
	if err != nil {
		return err
	}
	resp, err := j.client.Do(req)
	if err != nil {
		return fmt.Errorf("fetch jwks: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch jwks: status %d", resp.StatusCode)
	}
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return fmt.Errorf("decode jwks: %w", err)
	}
	keys := map[string]any{}
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		pub, err := k.publicKey()
		if err != nil {
			continue // a key type we do not use must not break the others
		}
		keys[k.Kid] = pub
	}
	if len(keys) == 0 {
		return errors.New("jwks has no usable signing key")
	}
	j.mu.Lock()
	j.keys = keys
	j.fetched = time.Now()
	j.mu.Unlock()
	return nil
}

func (k jwk) publicKey() (any, error) {
	switch k.Kty {
	case "RSA":
		n, err := b64int(k.N)
		if err != nil {
			return nil, err
		}
		e, err := b64int(k.E)
		if err != nil {
			return nil, err
		}
		if !e.IsInt64() || e.Int64() > 1<<31-1 {
			return nil, errors.New("rsa exponent too large")
		}
		return &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
	case "EC":
		var curve elliptic.Curve
		switch k.Crv {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		case "P-521":
			curve = elliptic.P521()
		default:
			return nil, fmt.Errorf("curve %q not supported", k.Crv)
		}
		size := (curve.Params().BitSize + 7) / 8
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(x) > size {
			return nil, errors.New("bad EC x coordinate")
		}
		y, err := base64.RawURLEncoding.DecodeString(k.Y)
		if err != nil || len(y) > size {
			return nil, errors.New("bad EC y coordinate")
		}
		// Uncompressed point: 0x04 || X || Y, each left-padded to the curve size.
		point := make([]byte, 1+2*size)
		point[0] = 4
		copy(point[1+size-len(x):1+size], x)
		copy(point[1+2*size-len(y):], y)
		return ecdsa.ParseUncompressedPublicKey(curve, point)
	default:
		return nil, fmt.Errorf("key type %q not supported", k.Kty)
	}
}

func b64int(s string) (*big.Int, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	return new(big.Int).SetBytes(b), nil
}
