package db

import "github.com/uptrace/bun"

// PreparedStatements answers how many statements the pool of bdb keeps prepared.
func PreparedStatements(bdb *bun.DB) int {
	c := stmtCacheOf(bdb.DB)
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.stmts)
}
