package bus_test

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agritrade/api/platform/bus"
	"github.com/agritrade/api/platform/testkit"
	"github.com/redis/go-redis/v9"
)

// blackhole is a TCP relay to a server that can swallow everything in both
// directions while keeping the connections open: what a half-open connection
// (a NAT or firewall dropping its state) looks like to both ends.
type blackhole struct {
	ln      net.Listener
	target  string
	dropped atomic.Bool
	mu      sync.Mutex
	conns   []net.Conn
}

func newBlackhole(t *testing.T, target string) *blackhole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{ln: ln, target: target}
	go b.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range b.conns {
			_ = c.Close()
		}
	})
	return b
}

func (b *blackhole) accept() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", b.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		b.mu.Lock()
		b.conns = append(b.conns, c, s)
		b.mu.Unlock()
		go b.relay(c, s)
		go b.relay(s, c)
	}
}

func (b *blackhole) relay(from, to net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 && !b.dropped.Load() {
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_ = to.Close()
			}
			return
		}
	}
}

// TestRedisSilentSubscription: b's connections go silent (no error on either
// socket, nothing arrives); its own probes stop coming back, so b gives the
// subscription up and, once the path works again, subscribes anew and runs
// its OnSubscribed handlers. (A relay may still hand over bytes it had not
// read yet, so the message sent meanwhile may or may not arrive here.)
func TestRedisSilentSubscription(t *testing.T) {
	defer bus.SetTiming(100*time.Millisecond, 500*time.Millisecond)()
	base := testkit.RedisOptions(t)
	hole := newBlackhole(t, base.Addr)
	viaHole := *base
	viaHole.Addr = hole.ln.Addr().String()
	viaHole.ReadTimeout, viaHole.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond
	ca, cb := redis.NewClient(base), redis.NewClient(&viaHole)
	t.Cleanup(func() { _ = ca.Close(); _ = cb.Close() })
	channel := testkit.UniqueName("agritrade-test:") + ":bus"
	reconnects(t, bus.NewRedis(ca, channel, nil), bus.NewRedis(cb, channel, nil), false, func() func() {
		hole.dropped.Store(true)
		// Long enough for b to notice, short of anything a test would call slow.
		time.Sleep(time.Second)
		return func() { hole.dropped.Store(false) }
	})
}
