package idempotency

import (
	"bytes"
	"context"
	"encoding/hex"
	"time"
)

// HoldStale inserts the running row of a request whose replica died at
// startedAt (its lease has passed since), as that replica left it.
func HoldStale(ctx context.Context, k *Keeper, sub, method, path, key, contentType string, body []byte, startedAt time.Time) error {
	s, _, err := readSpool(bytes.NewReader(body), contentType, int64(len(body)), 1<<20, "")
	if err != nil {
		return err
	}
	_, err = k.insert(ctx, scopeOf(sub, method, path, key), hex.EncodeToString(s.sum[:]), "dead-replica", startedAt.UTC())
	return err
}
