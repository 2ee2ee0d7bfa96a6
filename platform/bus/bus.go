// Package bus broadcasts small messages to every replica of the service: log
// settings, cache clears. Publish delivers to the local subscribers at once and
// to the other replicas through the backend; a replica ignores its own echoes.
package bus

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
)

// Handler receives a message's payload.
type Handler func(ctx context.Context, payload []byte)

// Bus is a replica-to-replica broadcast.
type Bus interface {
	// Publish delivers payload to the subscribers of topic on every replica.
	Publish(ctx context.Context, topic string, payload []byte) error
	// Subscribe registers a handler for a topic on this replica.
	Subscribe(topic string, h Handler)
	// Run receives messages from other replicas until ctx ends.
	Run(ctx context.Context) error
	// Close stops the backend.
	Close() error
	// Ready waits until Run receives messages from other replicas.
	Ready(ctx context.Context) error
	// OnSubscribed registers h to run each time the replica's subscription
	// becomes live: at start and after every reconnect. Messages published
	// before that moment may have been missed (they are not replayed), so
	// whoever keeps state from broadcasts resyncs it from its source here.
	OnSubscribed(h func(ctx context.Context))
}

// envelope is what travels between replicas.
type envelope struct {
	Origin  string          `json:"o"`
	Topic   string          `json:"t"`
	Payload json.RawMessage `json:"p"`
}

// local keeps the subscribers and the replica's identity; backends embed it.
type local struct {
	id   string
	log  logrus.FieldLogger
	mu   sync.RWMutex
	subs map[string][]Handler
	// onSub runs when a subscription becomes live (see session.go).
	onSub []func(ctx context.Context)
	// ready is closed once the backend receives from other replicas.
	ready     chan struct{}
	readyOnce sync.Once
}

func newLocal(log logrus.FieldLogger) *local {
	if log == nil {
		log = logrus.StandardLogger()
	}
	return &local{id: uuid.NewString(), log: log, subs: map[string][]Handler{}, ready: make(chan struct{})}
}

func (l *local) markReady() { l.readyOnce.Do(func() { close(l.ready) }) }

// probeTopic marks a replica's message to itself that proves its subscription.
const probeTopic = "bus.probe"

// isProbe tells whether raw is this replica's own readiness probe; other
// replicas' probes are dropped by receive like any message with no subscriber.
func (l *local) isProbe(raw []byte) bool {
	var e envelope
	return json.Unmarshal(raw, &e) == nil && e.Topic == probeTopic && e.Origin == l.id
}

// Ready waits until the bus receives from other replicas (or ctx ends).
func (l *local) Ready(ctx context.Context) error {
	select {
	case <-l.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *local) Subscribe(topic string, h Handler) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subs[topic] = append(l.subs[topic], h)
}

func (l *local) OnSubscribed(h func(ctx context.Context)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onSub = append(l.onSub, h)
}

func (l *local) subscribed(ctx context.Context) {
	l.mu.RLock()
	hs := append([]func(ctx context.Context){}, l.onSub...)
	l.mu.RUnlock()
	for _, h := range hs {
		h(ctx)
	}
}

func (l *local) deliver(ctx context.Context, topic string, payload []byte) {
	l.mu.RLock()
	hs := append([]Handler(nil), l.subs[topic]...)
	l.mu.RUnlock()
	for _, h := range hs {
		h(ctx, payload)
	}
}

func (l *local) encode(topic string, payload []byte) ([]byte, error) {
	if !json.Valid(payload) {
		b, err := json.Marshal(string(payload))
		if err != nil {
			return nil, err
		}
		payload = b
	}
	return json.Marshal(envelope{Origin: l.id, Topic: topic, Payload: payload})
}

// receive handles a raw envelope from another replica.
func (l *local) receive(ctx context.Context, raw []byte) {
	var e envelope
	if err := json.Unmarshal(raw, &e); err != nil {
		l.log.WithError(err).Warn("bus: dropping a malformed message")
		return
	}
	if e.Origin == l.id {
		return
	}
	l.deliver(ctx, e.Topic, e.Payload)
}

// Memory is the bus of a single process. It misses nothing, so its
// OnSubscribed handlers never run.
type Memory struct{ *local }

// NewMemory makes an in-process bus.
func NewMemory() *Memory {
	m := &Memory{newLocal(nil)}
	m.markReady()
	return m
}

// Publish delivers to local subscribers only.
func (m *Memory) Publish(ctx context.Context, topic string, payload []byte) error {
	m.deliver(ctx, topic, payload)
	return nil
}

// Run waits for ctx: there are no other replicas to hear from.
func (m *Memory) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// Close does nothing.
func (m *Memory) Close() error { return nil }
