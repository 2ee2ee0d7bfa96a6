package testkit

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a real server (Redis, MinIO,
// PostgreSQL...) and can cut them, so that a test sees what its code does
// when that dependency goes away and comes back, without stopping a server
// that other tests share. Cut closes every open connection and refuses new
// ones (connection refused, as with a stopped server); Restore accepts again.
type Proxy struct {
	// Addr is host:port to connect to instead of the target.
	Addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	done  bool
}

// NewProxy listens on a free local port and forwards to target (host:port);
// it stops when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{target: target, conns: map[net.Conn]struct{}{}}
	if err := p.listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.mu.Lock()
		p.done = true
		p.mu.Unlock()
		p.Cut()
	})
	return p
}

func (p *Proxy) listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ln, p.Addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go p.accept(ln)
	return nil
}

func (p *Proxy) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, up) {
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
	}
	go pipe(up, c)
	go pipe(c, up)
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// Cut refuses new connections and resets the open ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, as when the server's host goes away
		}
		_ = c.Close()
		delete(p.conns, c)
	}
}

// Restore accepts connections again on the same address.
func (p *Proxy) Restore(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	up, done := p.ln != nil, p.done
	p.mu.Unlock()
	if up || done {
		return
	}
	if err := p.listen(p.Addr); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatalf("proxy: listen again on %s: %v", p.Addr, err)
	}
}
