// Package outboxtest holds real local receivers for tests of notifications: an
// HTTP webhook receiver that verifies signatures, and a minimal SMTP server
// speaking the protocol over a TCP listener. Both can fail on purpose and
// record everything they accept.
package outboxtest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agritrade/api/platform/outbox"
)

// Delivery is one request the webhook receiver got.
type Delivery struct {
	EventID string
	Type    string
	Attempt string
	Body    []byte
	// Verified tells whether the signature and timestamp checked out.
	Verified bool
	// Status is what the receiver answered.
	Status int
	// At is when the request arrived.
	At time.Time
}

// Receiver is a local webhook endpoint.
type Receiver struct {
	URL    string
	Secret string
	srv    *httptest.Server
	mu     sync.Mutex
	got    []Delivery
	fail   int
	hold   chan struct{}
	held   chan string
	notify chan struct{}
}

// NewReceiver starts a webhook receiver checking signatures made with secret.
func NewReceiver(t testing.TB, secret string) *Receiver {
	t.Helper()
	r := &Receiver{Secret: secret, notify: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL + "/hooks/agritrade"
	t.Cleanup(func() {
		r.Release()
		r.srv.CloseClientConnections()
		r.srv.Close()
	})
	return r
}

// FailNext makes the next n requests answer 503.
func (r *Receiver) FailNext(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = n
}

// Hold makes requests wait (without answering) until Release; each held
// request's event id is sent on the returned channel when it arrives.
func (r *Receiver) Hold() <-chan string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hold = make(chan struct{})
	r.held = make(chan string, 16)
	return r.held
}

// Release lets held requests go on (they then fail: the sender is gone or waits).
func (r *Receiver) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hold != nil {
		close(r.hold)
		r.hold = nil
	}
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(req.Body)
	d := Delivery{At: at,
		EventID: req.Header.Get(outbox.HeaderEventID), Type: req.Header.Get(outbox.HeaderEventType),
		Attempt: req.Header.Get(outbox.HeaderAttempt), Body: body,
	}
	d.Verified = outbox.Verify([]byte(r.Secret), req.Header.Get(outbox.HeaderTimestamp), req.Header.Get(outbox.HeaderSignature), body, time.Now(), 5*time.Minute) == nil
	r.mu.Lock()
	hold, held := r.hold, r.held
	r.mu.Unlock()
	if hold != nil {
		held <- d.EventID
		select {
		case <-hold:
		case <-req.Context().Done():
		}
		http.Error(w, "held", http.StatusServiceUnavailable)
		return
	}
	r.mu.Lock()
	d.Status = http.StatusOK
	switch {
	case !d.Verified:
		d.Status = http.StatusUnauthorized
	case r.fail > 0:
		r.fail--
		d.Status = http.StatusServiceUnavailable
	}
	r.got = append(r.got, d)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
	w.WriteHeader(d.Status)
}

// Deliveries answers every request received so far (held ones excepted).
func (r *Receiver) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.got...)
}

// Accepted answers the deliveries the receiver answered 200, by event id.
func (r *Receiver) Accepted() map[string]int {
	out := map[string]int{}
	for _, d := range r.Deliveries() {
		if d.Status == http.StatusOK {
			out[d.EventID]++
		}
	}
	return out
}

// WaitAccepted waits until n distinct events were accepted, failing the test
// after timeout.
func (r *Receiver) WaitAccepted(t testing.TB, n int, timeout time.Duration) map[string]int {
	t.Helper()
	deadline := time.After(timeout)
	for {
		if got := r.Accepted(); len(got) >= n {
			return got
		}
		select {
		case <-r.notify:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("webhook receiver: %d events accepted, want %d; deliveries %+v", len(r.Accepted()), n, r.Deliveries())
		}
	}
}

// Mail is one message the SMTP server accepted.
type Mail struct {
	From string
	To   []string
	Data string
}

// SMTPServer is a minimal SMTP server (RFC 5321 subset: HELO/EHLO, MAIL, RCPT,
// DATA with dot-unstuffing, RSET, NOOP, QUIT) on a local port.
type SMTPServer struct {
	Host string
	Port int
	ln   net.Listener
	mu   sync.Mutex
	got  []Mail
	fail int
	wg   sync.WaitGroup
}

// NewSMTPServer starts the server on 127.0.0.1 on a free port.
func NewSMTPServer(t testing.TB) *SMTPServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &SMTPServer{Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, ln: ln}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		s.wg.Wait()
	})
	return s
}

// FailNext makes the next n messages fail at the end of DATA with a temporary 451.
func (s *SMTPServer) FailNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = n
}

// Mails answers every accepted message.
func (s *SMTPServer) Mails() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.got...)
}

// WaitMails waits until n messages were accepted.
func (s *SMTPServer) WaitMails(t testing.TB, n int, timeout time.Duration) []Mail {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if got := s.Mails(); len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("smtp server: %d mails, want %d", len(s.Mails()), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *SMTPServer) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.session(conn)
		}()
	}
}

func (s *SMTPServer) session(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	rd := bufio.NewReader(conn)
	reply := func(line string) { _, _ = io.WriteString(conn, line+"\r\n") }
	reply("220 outboxtest ESMTP ready")
	var cur *Mail
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		verb := strings.ToUpper(line)
		switch {
		case strings.HasPrefix(verb, "EHLO"):
			reply("250-outboxtest greets you")
			reply("250-8BITMIME")
			reply("250 SIZE 10485760")
		case strings.HasPrefix(verb, "HELO"):
			reply("250 outboxtest")
		case strings.HasPrefix(verb, "MAIL FROM:"):
			cur = &Mail{From: addrArg(line[len("MAIL FROM:"):])}
			reply("250 OK")
		case strings.HasPrefix(verb, "RCPT TO:"):
			if cur == nil {
				reply("503 MAIL first")
				continue
			}
			cur.To = append(cur.To, addrArg(line[len("RCPT TO:"):]))
			reply("250 OK")
		case verb == "DATA":
			if cur == nil || len(cur.To) == 0 {
				reply("503 RCPT first")
				continue
			}
			reply("354 end with <CRLF>.<CRLF>")
			var b strings.Builder
			for {
				l, err := rd.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" || l == ".\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, ".")) // dot-unstuffing
			}
			cur.Data = b.String()
			s.mu.Lock()
			failed := s.fail > 0
			if failed {
				s.fail--
			} else {
				s.got = append(s.got, *cur)
			}
			s.mu.Unlock()
			cur = nil
			if failed {
				reply("451 4.3.0 try again later")
			} else {
				reply("250 OK queued")
			}
		case verb == "RSET":
			cur = nil
			reply("250 OK")
		case verb == "NOOP":
			reply("250 OK")
		case verb == "QUIT":
			reply("221 bye")
			return
		default:
			reply("502 command not implemented")
		}
	}
}

func addrArg(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, ' '); i >= 0 {
		s = s[:i] // drop ESMTP parameters such as BODY=8BITMIME
	}
	return strings.Trim(s, "<>")
}
