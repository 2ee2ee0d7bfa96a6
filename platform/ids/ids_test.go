package ids

import (
	"context"
	"testing"

	"github.com/google/uuid"
)

func TestNew(t *testing.T) {
	t.Run("fresh_uuid_v7", func(t *testing.T) {
		a, b := New(context.Background()), New(context.Background())
		u, err := uuid.Parse(a)
		if err != nil || u.Version() != 7 || a == b {
			t.Fatalf("New = %q, %q (err %v): want two distinct UUIDv7", a, b, err)
		}
	})
	t.Run("fixed_by_context", func(t *testing.T) {
		ctx := WithFixed(context.Background(), "01900000-0000-7000-8000-00000000a001")
		if got := New(ctx); got != "01900000-0000-7000-8000-00000000a001" {
			t.Fatalf("New = %q", got)
		}
		if _, ok := Fixed(WithFixed(context.Background(), "")); ok {
			t.Fatal("an empty fixed id counts as fixed")
		}
	})
}
