// Package admin holds the System module's runtime administration: clearing
// the cache on every replica and reloading secrets.
package admin

import (
	"fmt"
	"strings"

	"github.com/agritrade/api/platform/apierr"
)

// Limits of a clear request.
const (
	MaxKeys   = 1000
	MaxKeyLen = 512
)

// ClearRequest is the body of POST /system/v1/cache.
type ClearRequest struct {
	Keys     []string `json:"keys"`
	Prefixes []string `json:"prefixes"`
	Flush    *bool    `json:"flush"`
	Secrets  *bool    `json:"secrets"`
}

// Clear is a validated clear request.
type Clear struct {
	Keys     []string
	Prefixes []string
	Flush    bool
	Secrets  bool
}

// Validate checks every field and returns the request to carry out. It asks
// for something to do, and refuses an empty prefix (that is what flush is for).
func (r ClearRequest) Validate() (Clear, error) {
	var f apierr.Fields
	c := Clear{Flush: r.Flush != nil && *r.Flush, Secrets: r.Secrets != nil && *r.Secrets}
	check := func(name string, list []string) []string {
		if len(list) > MaxKeys {
			f.Add(name, "max_items", fmt.Sprintf("must hold at most %d items", MaxKeys), map[string]any{"max": MaxKeys, "actual": len(list)})
			return nil
		}
		out := make([]string, 0, len(list))
		for i, k := range list {
			k = strings.TrimSpace(k)
			switch {
			case k == "":
				f.At(name).Index(i).Add("", "required", "must not be empty (use flush to empty the cache)", nil)
			case len(k) > MaxKeyLen:
				f.At(name).Index(i).Add("", "max_length", fmt.Sprintf("must be at most %d characters", MaxKeyLen), map[string]any{"max": MaxKeyLen, "actual": len(k)})
			default:
				out = append(out, k)
			}
		}
		return out
	}
	c.Keys = check("keys", r.Keys)
	c.Prefixes = check("prefixes", r.Prefixes)
	if f.Empty() && len(c.Keys) == 0 && len(c.Prefixes) == 0 && !c.Flush && !c.Secrets {
		f.Add("keys", "required", "give keys, prefixes, flush or secrets: there is nothing to clear", nil)
	}
	return c, f.Err()
}
