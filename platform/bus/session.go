package bus

import (
	"context"
	"errors"
	"time"
)

// A backend's subscription can break without a word: the connection dies and
// the driver reconnects, a half-open TCP connection stays silent, the server
// drops a slow subscriber. Messages published meanwhile are lost for good
// (NOTIFY and Redis pub/sub keep nothing for an absent listener). So the bus
// does not trust a subscription it has not seen working: each replica
// publishes probes to itself, a subscription counts as live only once its own
// probe comes back, and one that stops echoing probes is replaced. Every time a
// subscription becomes live (at start, and after every reconnect) the
// OnSubscribed handlers run, so that state kept from broadcasts (cache
// contents, log settings) resyncs from its source of truth: whatever was
// published before that moment may have been missed, nothing after it is.

// Timing of the liveness checks.
var (
	// probeEvery is how often a subscription that is not live yet probes.
	probeEvery = 100 * time.Millisecond
	// heartbeat is how often a live subscription probes.
	heartbeat = 2 * time.Second
	// deadAfter is how long a live subscription may go without its own probe
	// coming back before it is replaced.
	deadAfter = 3 * heartbeat
	// receiveWait bounds one wait for a message, so the loop keeps its timers.
	receiveWait = 250 * time.Millisecond
	// retryMax caps the pause between attempts to subscribe.
	retryMax = 2 * time.Second
)

// errTimeout is what a subscription answers when nothing arrived in time.
var errTimeout = errors.New("bus: no message within the wait")

// subscription is one connection listening on the bus channel.
type subscription interface {
	// receive waits up to wait for the next payload; nil payload and nil error
	// mean activity without a message (a confirmation, a pong); errTimeout
	// means nothing came; any other error ends the subscription.
	receive(ctx context.Context, wait time.Duration) ([]byte, error)
	close() error
}

// transport is what a backend provides: new subscriptions and raw publishing.
type transport interface {
	subscribe(ctx context.Context) (subscription, error)
	publish(ctx context.Context, msg []byte) error
}

// run keeps a live subscription until ctx ends, replacing any that fails or
// goes silent, and delivers what arrives.
func (l *local) run(ctx context.Context, t transport) error {
	pause := probeEvery
	for {
		err := l.session(ctx, t, func() { pause = probeEvery })
		if ctx.Err() != nil {
			return nil
		}
		l.log.WithError(err).Warn("bus: subscription lost; subscribing again (broadcasts meanwhile are resynced)")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
		pause = min(2*pause, retryMax)
	}
}

// session runs one subscription. When its first probe comes back it is live:
// live is called, the OnSubscribed handlers run, then the bus is ready (so
// that Ready means resynced). One that is not live within deadAfter, or stops
// echoing for that long, is given up.
func (l *local) session(ctx context.Context, t transport, live func()) error {
	sub, err := t.subscribe(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = sub.close() }()
	probe, err := l.encode(probeTopic, []byte(`{}`))
	if err != nil {
		return err
	}
	isLive := false
	lastEcho, lastProbe := time.Now(), time.Time{}
	for {
		now := time.Now()
		every := probeEvery
		if isLive {
			every = heartbeat
		}
		if now.Sub(lastEcho) > deadAfter {
			return errors.New("bus: the subscription does not echo probes")
		}
		if now.Sub(lastProbe) >= every {
			lastProbe = now
			if err := t.publish(ctx, probe); err != nil && ctx.Err() == nil {
				l.log.WithError(err).Debug("bus: probe not sent")
			}
		}
		payload, err := sub.receive(ctx, receiveWait)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errTimeout):
			continue
		case err != nil:
			return err
		case payload == nil:
			continue
		case l.isProbe(payload):
			lastEcho = time.Now()
			if !isLive {
				isLive = true
				live()
				l.subscribed(ctx)
				l.markReady()
			}
		default:
			l.receive(ctx, payload)
		}
	}
}
