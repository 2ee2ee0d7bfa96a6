package bus

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"
)

// Redis broadcasts with Redis pub/sub on a channel of the deployment's own
// (config redis.prefix), so deployments sharing a Redis never hear each other.
type Redis struct {
	*local
	client  *redis.Client
	channel string
}

// NewRedis makes a bus over a Redis client on a channel.
func NewRedis(client *redis.Client, channel string, log logrus.FieldLogger) *Redis {
	return &Redis{local: newLocal(log), client: client, channel: channel}
}

// Publish delivers locally and publishes to the other replicas.
func (r *Redis) Publish(ctx context.Context, topic string, payload []byte) error {
	r.deliver(ctx, topic, payload)
	msg, err := r.encode(topic, payload)
	if err != nil {
		return err
	}
	return r.publish(ctx, msg)
}

func (r *Redis) publish(ctx context.Context, msg []byte) error {
	return r.client.Publish(ctx, r.channel, msg).Err()
}

// Run subscribes until ctx ends, replacing a subscription that fails or stops
// echoing probes (see session.go).
func (r *Redis) Run(ctx context.Context) error { return r.run(ctx, r) }

func (r *Redis) subscribe(ctx context.Context) (subscription, error) {
	sub := r.client.Subscribe(ctx, r.channel)
	if _, err := sub.Receive(ctx); err != nil {
		_ = sub.Close()
		return nil, err
	}
	return redisSubscription{sub}, nil
}

type redisSubscription struct{ sub *redis.PubSub }

func (s redisSubscription) receive(ctx context.Context, wait time.Duration) ([]byte, error) {
	msg, err := s.sub.ReceiveTimeout(ctx, wait)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil, errTimeout
	}
	if err != nil {
		return nil, err
	}
	if m, ok := msg.(*redis.Message); ok {
		return []byte(m.Payload), nil
	}
	return nil, nil // a (re)subscription confirmation or a pong
}

func (s redisSubscription) close() error { return s.sub.Close() }

// Close does nothing: the client belongs to the caller.
func (r *Redis) Close() error { return nil }
