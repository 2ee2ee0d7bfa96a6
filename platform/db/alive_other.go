//go:build !unix

package db

import (
	"context"

	"github.com/uptrace/bun/driver/pgdriver"
)

// checkAlive has no cheap socket peek here: a dead pooled connection fails
// its next query, which is classified unavailable (503) and then dropped.
func checkAlive(context.Context, *pgdriver.Conn) error { return nil }
