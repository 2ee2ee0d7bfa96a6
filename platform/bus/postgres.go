package bus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
)

// Channel is the PostgreSQL NOTIFY channel of the bus. Channels are per
// database, and a deployment owns its database, so the name is fixed.
const Channel = "agritrade_bus"

// maxNotifyPayload is PostgreSQL's NOTIFY payload limit less some margin.
const maxNotifyPayload = 7900

// Postgres broadcasts with LISTEN/NOTIFY: no extra service beyond the database.
type Postgres struct {
	*local
	db *bun.DB
}

// NewPostgres makes a bus over db, which must be a PostgreSQL database.
func NewPostgres(db *bun.DB, log logrus.FieldLogger) *Postgres {
	return &Postgres{local: newLocal(log), db: db}
}

// Publish delivers locally and notifies the other replicas.
func (p *Postgres) Publish(ctx context.Context, topic string, payload []byte) error {
	p.deliver(ctx, topic, payload)
	msg, err := p.encode(topic, payload)
	if err != nil {
		return err
	}
	if len(msg) > maxNotifyPayload {
		return fmt.Errorf("bus message of %d bytes exceeds the NOTIFY limit", len(msg))
	}
	return p.publish(ctx, msg)
}

func (p *Postgres) publish(ctx context.Context, msg []byte) error {
	_, err := p.db.ExecContext(ctx, "SELECT pg_notify(?, ?)", Channel, string(msg))
	return err
}

// Run listens until ctx ends, on a connection of its own that is replaced
// whenever it fails or stops echoing probes (see session.go).
func (p *Postgres) Run(ctx context.Context) error { return p.run(ctx, p) }

// subscribe opens a listener of its own: pgdriver would reconnect a shared one
// silently, and the bus must know when it did.
func (p *Postgres) subscribe(ctx context.Context) (subscription, error) {
	ln := pgdriver.NewListener(p.db)
	if err := ln.Listen(ctx, Channel); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("listen %s: %w", Channel, err)
	}
	return pgSubscription{ln}, nil
}

type pgSubscription struct{ ln *pgdriver.Listener }

func (s pgSubscription) receive(ctx context.Context, wait time.Duration) ([]byte, error) {
	_, payload, err := s.ln.ReceiveTimeout(ctx, wait)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil, errTimeout
	}
	if err != nil {
		return nil, err
	}
	return []byte(payload), nil
}

func (s pgSubscription) close() error { return s.ln.Close() }

// Close does nothing: Run's listeners close when its context ends.
func (p *Postgres) Close() error { return nil }
