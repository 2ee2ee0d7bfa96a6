// Package events is the live event stream of the API (GET /system/v1/events,
// Server-Sent Events) and its durable log.
//
// A feature calls Append with the transaction of the change, so an event exists
// exactly when its change does (the outbox's rule, and the same commit hook:
// db.AfterCommit). Ids are commit-ordered (inCommitOrder), which is what lets
// a stream resume from "the last id sent". Each event names its audiences: "user:<id>" or
// "org:<id>", the people who may see the object it is about; a stream listens to
// its caller's user id and the organisations of its token. Once the transaction
// commits, the ids of the new events go over the bus to every replica; each
// replica's Hub reads those rows once and hands them to its open streams of
// those audiences. A client that reconnects with Last-Event-ID replays what it
// missed from the database, on whichever replica it reaches.
package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/uptrace/bun"
)

// The event types of the stream.
const (
	TypeMessageCreated = "message.created"
	TypeLoadUpdated    = "load.updated"
	TypeListingAlert   = "listing.alert"
)

// User is the audience of one user (the token's sub).
func User(id string) string { return "user:" + id }

// Org is the audience of the members of an organisation (the token's org and orgs).
func Org(id string) string { return "org:" + id }

// Event is what a feature appends.
type Event struct {
	Type string
	// Audiences may see the event (User, Org); empty ones are dropped.
	Audiences []string
	// Data is the payload; it must marshal to JSON.
	Data any
}

// Record is a stored event.
type Record struct {
	bun.BaseModel `bun:"table:platform_events,alias:e"`

	ID        int64     `bun:"id,pk,autoincrement"`
	Type      string    `bun:"type,notnull"`
	Data      string    `bun:"data,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
	// Audience is the audience through which a query found the event (scanonly).
	Audience string `bun:"audience,scanonly"`
}

type audienceRow struct {
	bun.BaseModel `bun:"table:platform_event_audiences,alias:a"`

	Audience string `bun:"audience,pk"`
	EventID  int64  `bun:"event_id,pk"`
}

// Append writes the event in the caller's transaction (idb is the bun.Tx of
// the change, inside db.InTx). Once it commits, every replica's streams of its
// audiences receive it; a rollback leaves no trace. Within db.InTx the row is
// inserted at the end of the transaction (see inCommitOrder); its errors are
// then InTx's.
func Append(ctx context.Context, idb bun.IDB, e Event) error {
	if strings.TrimSpace(e.Type) == "" {
		return errors.New("events: type is required")
	}
	names := cleanAudiences(e.Audiences)
	if len(names) == 0 {
		return nil
	}
	data, err := json.Marshal(e.Data)
	if err != nil {
		return fmt.Errorf("events: data of %s is not JSON: %w", e.Type, err)
	}
	rec := &Record{Type: e.Type, Data: string(data), CreatedAt: time.Now().UTC()}
	return inCommitOrder(ctx, idb, func(ctx context.Context, idb bun.IDB) ([]announcement, error) {
		if _, err := idb.NewInsert().Model(rec).Returning("id").Exec(ctx); err != nil {
			return nil, err
		}
		audiences := make([]audienceRow, len(names))
		for i, a := range names {
			audiences[i] = audienceRow{Audience: a, EventID: rec.ID}
		}
		if _, err := idb.NewInsert().Model(&audiences).Exec(ctx); err != nil {
			return nil, err
		}
		return []announcement{newAnnouncement(rec, names)}, nil
	})
}

// AppendAll writes several events in the caller's transaction in a few
// multi-row statements (a listing that raises hundreds of alerts), with the
// same guarantees as Append.
func AppendAll(ctx context.Context, idb bun.IDB, es []Event) error {
	const chunk = 500
	for start := 0; start < len(es); start += chunk {
		if err := appendChunk(ctx, idb, es[start:min(start+chunk, len(es))]); err != nil {
			return err
		}
	}
	return nil
}

func appendChunk(ctx context.Context, idb bun.IDB, es []Event) error {
	recs := make([]*Record, 0, len(es))
	audiences := make([][]string, 0, len(es))
	now := time.Now().UTC()
	for _, e := range es {
		if strings.TrimSpace(e.Type) == "" {
			return errors.New("events: type is required")
		}
		as := cleanAudiences(e.Audiences)
		if len(as) == 0 {
			continue
		}
		data, err := json.Marshal(e.Data)
		if err != nil {
			return fmt.Errorf("events: data of %s is not JSON: %w", e.Type, err)
		}
		recs = append(recs, &Record{Type: e.Type, Data: string(data), CreatedAt: now})
		audiences = append(audiences, as)
	}
	if len(recs) == 0 {
		return nil
	}
	return inCommitOrder(ctx, idb, func(ctx context.Context, idb bun.IDB) ([]announcement, error) {
		// RETURNING fills each record's id in the order of the rows (both dialects).
		if _, err := idb.NewInsert().Model(&recs).Returning("id").Exec(ctx); err != nil {
			return nil, err
		}
		var rows []audienceRow
		anns := make([]announcement, len(recs))
		for i, r := range recs {
			if r.ID == 0 {
				return nil, errors.New("events: an inserted event has no id")
			}
			anns[i] = newAnnouncement(r, audiences[i])
			for _, a := range audiences[i] {
				rows = append(rows, audienceRow{Audience: a, EventID: r.ID})
			}
		}
		if _, err := idb.NewInsert().Model(&rows).Exec(ctx); err != nil {
			return nil, err
		}
		return anns, nil
	})
}

// idOrderLock is the PostgreSQL advisory lock that makes event ids
// commit-ordered: the bytes "agrievnt" (apart from the migration lock
// "agrimigr" and the reference-data seed's "refda").
const idOrderLock int64 = 0x6167726965766e74

// idOrderLockKey registers the lock once per transaction (db.BeforeCommit).
type idOrderLockKey struct{}

// inCommitOrder runs write, the insert of event rows, so that event ids are
// handed out in the order their transactions commit, and announces the
// events once they have.
//
// Why: streams and replays read "the events after the last id sent". On
// PostgreSQL ids come from a sequence when the row is inserted, and two
// transactions may commit in the other order (T1 takes 10, T2 takes 11, T2
// commits first): a stream that sent 11 would never send 10. So on
// PostgreSQL the insert takes a transaction-level advisory lock first, and
// within db.InTx both run as the transaction's last statements
// (db.BeforeCommit): the lock is held for the insert and the COMMIT only (no
// row lock of the change is taken while holding it, so it cannot deadlock),
// and the transaction that takes the next id waits until the previous holder
// has committed or rolled back, which PostgreSQL makes visible before it
// releases the lock. A transaction with several events takes the lock once
// (the key), before its first insert. On SQLite no lock is needed: writers
// are one at a time (the write gate and SQLite's own write lock), so ids
// already commit in order.
//
// Outside db.InTx (idb the pool, or a transaction of the caller's own), the
// lock and the insert run in a transaction of their own (a savepoint within
// the caller's), and the events are announced when it ends.
func inCommitOrder(ctx context.Context, idb bun.IDB, write func(ctx context.Context, idb bun.IDB) ([]announcement, error)) error {
	pg := db.IsPostgres(idb)
	lock := func(ctx context.Context, idb bun.IDB) error {
		if !pg {
			return nil
		}
		_, err := idb.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", idOrderLock)
		return err
	}
	bdb := db.TxDB(ctx)
	if db.BeforeCommit(ctx, idOrderLockKey{}, func(ctx context.Context) error { return lock(ctx, idb) }) {
		db.BeforeCommit(ctx, nil, func(ctx context.Context) error {
			anns, err := write(ctx, idb)
			if err != nil {
				return err
			}
			db.AfterCommit(ctx, func() {
				for _, a := range anns {
					announce(bdb, a)
				}
			})
			return nil
		})
		return nil
	}
	var anns []announcement
	err := idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := lock(ctx, tx); err != nil {
			return err
		}
		var err error
		anns, err = write(ctx, tx)
		return err
	})
	if err != nil {
		return err
	}
	for _, a := range anns {
		announce(bdb, a)
	}
	return nil
}

func cleanAudiences(in []string) []string {
	out := make([]string, 0, len(in))
	seen := map[string]bool{}
	for _, a := range in {
		if i := strings.IndexByte(a, ':'); i < 0 || i == len(a)-1 || seen[a] {
			continue
		}
		seen[a] = true
		out = append(out, a)
	}
	return out
}

// hubs are the Hubs running in this process (one per server; tests run several).
var hubs = struct {
	sync.Mutex
	set map[*Hub]struct{}
}{set: map[*Hub]struct{}{}}

// announce tells every replica, through the bus of each hub running here over
// the database of the commit (bdb; every hub when unknown), that event id was
// committed. A process normally runs one hub. Tests run several servers in one
// process: a hub over another database must not hear of this id (it would read
// its own event of that id), and a hub over another pool of the same database
// (another replica) hears of it over the bus, as it would in production.
func announce(bdb *bun.DB, a announcement) {
	hubs.Lock()
	list := make([]*Hub, 0, len(hubs.set))
	for h := range hubs.set {
		if bdb == nil || h.db == bdb {
			list = append(list, h)
		}
	}
	hubs.Unlock()
	for _, h := range list {
		h.publish(a)
	}
}

// byIDs reads committed events by id with their audiences (one row per
// audience), in id order.
func byIDs(ctx context.Context, idb bun.IDB, ids []int64) ([]Record, error) {
	var recs []Record
	err := idb.NewSelect().Model(&recs).ColumnExpr("e.*").ColumnExpr("a.audience").
		Join("JOIN platform_event_audiences AS a ON a.event_id = e.id").
		Where("e.id IN (?)", bun.List(ids)).OrderExpr("e.id").Scan(ctx)
	return recs, err
}

// between reads the committed events with ids between after and before
// (both exclusive) with their audiences (one row per audience), in id order.
func between(ctx context.Context, idb bun.IDB, after, before int64) ([]Record, error) {
	var recs []Record
	err := idb.NewSelect().Model(&recs).ColumnExpr("e.*").ColumnExpr("a.audience").
		Join("JOIN platform_event_audiences AS a ON a.event_id = e.id").
		Where("e.id > ?", after).Where("e.id < ?", before).OrderExpr("e.id").Scan(ctx)
	return recs, err
}

// since reads up to limit events of the audiences after id (exclusive) and
// not older than notBefore, each once, in id order.
func since(ctx context.Context, idb bun.IDB, audiences []string, after int64, notBefore time.Time, limit int64) ([]Record, error) {
	var recs []Record
	ids := idb.NewSelect().Model((*audienceRow)(nil)).Column("a.event_id").
		Where("a.audience IN (?)", bun.List(audiences)).Where("a.event_id > ?", after)
	err := idb.NewSelect().Model(&recs).Where("e.id IN (?)", ids).Where("e.created_at >= ?", notBefore.UTC()).
		OrderExpr("e.id").Limit(limit).Scan(ctx)
	return recs, err
}

// latest answers the id of the newest event (0 when none): the starting point
// of a stream opened without Last-Event-ID.
func latest(ctx context.Context, idb bun.IDB) (int64, error) {
	var id []int64
	err := idb.NewSelect().Model((*Record)(nil)).ColumnExpr("COALESCE(MAX(e.id), 0)").Scan(ctx, &id)
	if err != nil || len(id) == 0 {
		return 0, err
	}
	return id[0], nil
}

// purge deletes events older than before (their audiences go with them).
func purge(ctx context.Context, bdb *bun.DB, before time.Time) (int64, error) {
	var n int64
	err := db.InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
		old := tx.NewSelect().Model((*Record)(nil)).Column("e.id").Where("e.created_at < ?", before.UTC())
		if _, err := tx.NewDelete().Model((*audienceRow)(nil)).Where("event_id IN (?)", old).Exec(ctx); err != nil {
			return err
		}
		res, err := tx.NewDelete().Model((*Record)(nil)).Where("created_at < ?", before.UTC()).Exec(ctx)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
