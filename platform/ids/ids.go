// Package ids names the records a request creates.
//
// A new record's id is a UUIDv7 (time-ordered, so keyset paging and indexes
// stay append-mostly). A context may fix it instead: `agritrade demo` drives
// the engine in process and creates its sample under known ids, so that the
// examples of the OpenAPI documents (and /docs' "Try it") cite objects that
// exist. Only Go code holding the context can fix an id; nothing a client
// sends over HTTP reaches it.
package ids

import (
	"context"

	"github.com/google/uuid"
)

type fixedKey struct{}

// WithFixed returns a context whose request creates its one record under id.
// A request that creates several records of the same kind must not carry it
// (they would share the id and the second insert would fail).
func WithFixed(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, fixedKey{}, id)
}

// Fixed is the id the context fixes, if any.
func Fixed(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(fixedKey{}).(string)
	return id, ok && id != ""
}

// New is the id of a new record: the fixed one, else a fresh UUIDv7.
func New(ctx context.Context) string {
	if id, ok := Fixed(ctx); ok {
		return id
	}
	return uuid.Must(uuid.NewV7()).String()
}
