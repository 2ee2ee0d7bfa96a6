package bus

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"
)

// Redis broadcasts with Redis pub/sub.
type Redis struct {
	*local
	client *redis.Client
}

// NewRedis makes a bus over a Redis client.
func NewRedis(client *redis.Client, log logrus.FieldLogger) *Redis {
	return &Redis{local: newLocal(log), client: client}
}

// Publish delivers locally and publishes to the other replicas.
func (r *Redis) Publish(ctx context.Context, topic string, payload []byte) error {
	r.deliver(ctx, topic, payload)
	msg, err := r.encode(topic, payload)
	if err != nil {
		return err
	}
	return r.client.Publish(ctx, Channel, msg).Err()
}

// Run subscribes until ctx ends; go-redis resubscribes after reconnects.
func (r *Redis) Run(ctx context.Context) error {
	sub := r.client.Subscribe(ctx, Channel)
	defer func() { _ = sub.Close() }()
	if _, err := sub.Receive(ctx); err != nil {
		return err
	}
	ch := sub.Channel()
	r.markReady()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return errors.New("redis subscription closed")
			}
			r.receive(ctx, []byte(m.Payload))
		}
	}
}

// Close does nothing: the client belongs to the caller.
func (r *Redis) Close() error { return nil }
