package db

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"

	"github.com/agritrade/api/platform/fault"
	"github.com/uptrace/bun/driver/pgdriver"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// IsUniqueViolation tells whether err is a unique-constraint violation on either dialect.
func IsUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		return pgErr.Field('C') == "23505"
	}
	msg := err.Error()
	return strings.Contains(msg, "UNIQUE constraint failed") || strings.Contains(msg, "constraint failed: UNIQUE")
}

// IsQueryCanceled tells whether PostgreSQL cancelled a statement (SQLSTATE
// 57014: its statement_timeout ran out, or it was cancelled), for callers
// that bound a query's time and fall back when it is up. SQLite has no
// statement timeout: false.
func IsQueryCanceled(err error) bool {
	var pgErr pgdriver.Error
	return errors.As(err, &pgErr) && pgErr.Field('C') == "57014"
}

// IsUnavailable tells whether err means the database cannot answer now but may
// a moment later: it is down, restarting, failing over, out of connections or
// resources, or too busy. This is the one place that knows the drivers' codes;
// the HTTP layer answers such errors 503 with Retry-After (app registers this
// function with the error middleware), background work retries them.
//
// What counts:
//   - PostgreSQL SQLSTATE class 08 (connection exception), 53 (insufficient
//     resources: too many connections, disk full, out of memory), 58 (system or
//     I/O error), 57P01/57P02/57P03 (terminated by an administrator, crash of
//     another backend, starting up or shutting down), 57014 (statement
//     cancelled: a timeout or an operator), 55P03 (lock not available), and
//     25006 (read-only transaction: connected to a standby during a failover),
//     and 55000 when it says the database is not accepting connections.
//   - PostgreSQL 40001 (serialization failure) and 40P01 (deadlock detected):
//     the transaction was rolled back through no fault of the request, and the
//     same request succeeds when repeated. They are transient, so they answer
//     503 with Retry-After rather than 409 (which would tell the client its
//     request conflicts with the state) or 500 (which would say it never works).
//   - SQLite BUSY and LOCKED (another process held the write lock for longer
//     than the busy timeout), IOERR and FULL (the disk), and ErrWriteLost (a
//     shared write transaction SQLite rolled back under the request).
//   - The connection itself: refused, reset, aborted, broken pipe, unreachable,
//     timeouts, DNS failures, the server closing it mid-conversation (EOF),
//     driver.ErrBadConn, sql.ErrConnDone, a closed pool, and a request deadline
//     that passed while waiting for the database.
//
// Integrity violations, syntax errors and the like are not unavailability:
// they stay 500 (or the 4xx a store maps them to).
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrWriteLost) {
		return true
	}
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		return pgUnavailable(pgErr.Field('C'), pgErr.Field('M'))
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		switch liteErr.Code() & 0xff { // extended codes carry the primary code in the low byte
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL:
			return true
		}
		return false
	}
	return isConnectionFailure(err)
}

// isSQLiteBusy tells whether err is SQLite's "database is locked".
func isSQLiteBusy(err error) bool {
	var liteErr *sqlite.Error
	return errors.As(err, &liteErr) && liteErr.Code()&0xff == sqlite3.SQLITE_BUSY
}

// pgUnavailable classifies a PostgreSQL SQLSTATE (and its message, for the
// one code that is shared with programming errors).
func pgUnavailable(code, message string) bool {
	if len(code) != 5 {
		return false
	}
	// 55000 is also what a wrong call sequence answers (currval before
	// nextval); only the refusal of connections to a database an operator
	// closed (ALTER DATABASE ... ALLOW_CONNECTIONS false) is an outage.
	if code == "55000" {
		return strings.Contains(message, "not currently accepting connections")
	}
	switch code[:2] {
	case "08", "53", "58":
		return true
	}
	switch code {
	case "57P01", "57P02", "57P03", "57014", "55P03", "25006", "40001", "40P01":
		return true
	}
	return false
}

// isConnectionFailure adds database/sql's own signs of a lost connection to
// the transport failures every dependency shares.
func isConnectionFailure(err error) bool {
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) || fault.IsConnectionFailure(err) {
		return true
	}
	// database/sql's "database is closed" is unexported: the pool was closed
	// under a request while the process shuts down.
	return strings.Contains(err.Error(), "sql: database is closed")
}
