package cache_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/agritrade/api/platform/cache"
	"github.com/redis/go-redis/v9"
)

// TestRedisUnavailable classifies what the real client answers: a Redis that
// refuses connections or a closed client is unavailability; a missing key and
// a command error (WRONGTYPE: a defect, not an outage) are not.
func TestRedisUnavailable(t *testing.T) {
	client := redisClient(t)
	prefix := uniquePrefix(t)
	ctx := context.Background()
	c := cache.NewRedis(client, prefix, time.Minute)
	if _, _, err := c.Get(ctx, "absent"); err != nil || cache.IsUnavailable(redis.Nil) {
		t.Fatalf("missing key: %v", err)
	}
	if err := client.Set(ctx, prefix+"s", "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Del(context.Background(), prefix+"s") })
	if err := client.LPush(ctx, prefix+"s", "y").Err(); err == nil || cache.IsUnavailable(err) {
		t.Fatalf("WRONGTYPE classified unavailable: %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	gone := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	_, _, err = cache.NewRedis(gone, prefix, time.Minute).Get(ctx, "k")
	if err == nil || !cache.IsUnavailable(err) {
		t.Fatalf("refused: %v", err)
	}
	_ = gone.Close()
	if _, _, err = cache.NewRedis(gone, prefix, time.Minute).Get(ctx, "k"); !cache.IsUnavailable(err) {
		t.Fatalf("closed client: %v", err)
	}
}
