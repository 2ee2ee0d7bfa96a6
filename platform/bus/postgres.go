package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
)

// Channel is the PostgreSQL NOTIFY channel (and Redis channel) of the bus.
const Channel = "agritrade_bus"

// maxNotifyPayload is PostgreSQL's NOTIFY payload limit less some margin.
const maxNotifyPayload = 7900

// Postgres broadcasts with LISTEN/NOTIFY: no extra service beyond the database.
type Postgres struct {
	*local
	db *bun.DB
	ln *pgdriver.Listener
}

// NewPostgres makes a bus over db, which must be a PostgreSQL database.
func NewPostgres(db *bun.DB, log logrus.FieldLogger) *Postgres {
	return &Postgres{local: newLocal(log), db: db, ln: pgdriver.NewListener(db)}
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
	_, err = p.db.ExecContext(ctx, "SELECT pg_notify(?, ?)", Channel, string(msg))
	return err
}

// Run listens until ctx ends; the listener reconnects by itself after errors.
func (p *Postgres) Run(ctx context.Context) error {
	if err := p.ln.Listen(ctx, Channel); err != nil {
		return fmt.Errorf("listen %s: %w", Channel, err)
	}
	ch := p.ln.Channel(pgdriver.WithChannelSize(256))
	// pgdriver sends LISTEN without waiting for the server: only a notification
	// that comes back proves the subscription is live. Probe until one does.
	probe := time.NewTicker(100 * time.Millisecond)
	defer probe.Stop()
	p.sendProbe(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-probe.C:
			if p.isReady() {
				probe.Stop()
				continue
			}
			p.sendProbe(ctx)
		case n, ok := <-ch:
			if !ok {
				return errors.New("bus listener closed")
			}
			if p.isProbe([]byte(n.Payload)) {
				p.markReady()
				continue
			}
			p.receive(ctx, []byte(n.Payload))
		}
	}
}

func (p *Postgres) sendProbe(ctx context.Context) {
	msg, err := p.encode(probeTopic, []byte(`{}`))
	if err == nil {
		_, err = p.db.ExecContext(ctx, "SELECT pg_notify(?, ?)", Channel, string(msg))
	}
	if err != nil && ctx.Err() == nil {
		p.log.WithError(err).Debug("bus: readiness probe failed; retrying")
	}
}

// Close stops listening.
func (p *Postgres) Close() error {
	return p.ln.Close()
}
