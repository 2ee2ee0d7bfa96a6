package events

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
)

// replayBatch is how many events one read of the log takes.
const replayBatch int64 = 200

// retryAfterStreams is the Retry-After (seconds) of a refused stream.
const retryAfterStreams = 5

// Audiences answers what a caller listens to: its user id and the
// organisations of its token.
func Audiences(p *auth.Principal) []string {
	orgs := p.Organisations()
	out := make([]string, 0, 1+len(orgs))
	out = append(out, User(p.UserID))
	for _, o := range orgs {
		out = append(out, Org(o))
	}
	return out
}

// lastEventID reads Last-Event-ID (the header browsers' EventSource send on
// reconnect): absent is 0; anything but a non-negative integer is refused.
func lastEventID(c *gin.Context) (id int64, given bool, err error) {
	raw := strings.TrimSpace(c.GetHeader("Last-Event-ID"))
	if raw == "" {
		return 0, false, nil
	}
	id, perr := strconv.ParseInt(raw, 10, 64)
	if perr != nil || id < 0 {
		shown := raw
		if len(shown) > 64 {
			shown = shown[:64] + "…"
		}
		return 0, true, apierr.Invalid(apierr.FieldError{Path: "Last-Event-ID", Code: "format",
			Message: "must be the id of an event (a non-negative integer)", Data: map[string]any{"actual": shown}})
	}
	return id, true, nil
}

// Serve is GET /system/v1/events: the caller's Server-Sent Events stream.
func (h *Hub) Serve(c *gin.Context) error {
	p := auth.FromContext(c)
	last, given, err := lastEventID(c)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	s, err := h.open(p.UserID, Audiences(p))
	switch {
	case errors.Is(err, errTooManyForUser):
		return &apierr.Error{Code: apierr.CodeRateLimited, Message: "too many open event streams for this user; close one first", RetryAfter: retryAfterStreams}
	case errors.Is(err, errTooMany), errors.Is(err, errClosing):
		return &apierr.Error{Code: apierr.CodeUnavailable, Message: "the event stream is unavailable on this server: " + err.Error(), RetryAfter: retryAfterStreams}
	}
	detachedOK := false
	defer func() {
		if !detachedOK {
			h.release(s)
		}
	}()
	// Registered first, then the starting point read: an event committed in
	// between is both in the buffer and in the log, and the id check below
	// sends it once.
	if !given {
		if last, err = latest(ctx, h.db); err != nil {
			return err
		}
	}
	var replay []Record
	if given {
		// The first batch is read before the answer starts, so a database
		// that is down answers 503 rather than an empty stream.
		if replay, err = since(ctx, h.db, s.audiences, last, time.Now().Add(-h.opts.Retention), replayBatch); err != nil {
			return err
		}
	}

	if httpx.IsHead(c) {
		// HEAD: the headers of a stream, without holding one open.
		c.Header("Content-Type", "text/event-stream")
		c.Header("Cache-Control", "no-cache")
		c.Status(http.StatusOK)
		return nil
	}
	if d := h.detach(c, s, p, replay, last); d != nil {
		detachedOK = true
		return nil
	}
	// The connection cannot be taken over (HTTP/2): this request's goroutine
	// serves the stream. A stream outlives any write deadline the server sets
	// for ordinary answers.
	rc := http.NewResponseController(c.Writer)
	_ = rc.SetWriteDeadline(time.Time{})
	hd := c.Writer.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	c.Status(http.StatusOK)
	w := &sse{w: bufio.NewWriterSize(c.Writer, 512), flush: func() error {
		if err := rc.Flush(); err != nil {
			return err
		}
		return nil
	}}
	w.comment("stream open")
	w.retry(3 * time.Second)
	if err := w.send(replay, &last); err != nil {
		return nil
	}
	if int64(len(replay)) == replayBatch {
		// More to replay: all of it before any live event, so that no live
		// event moves the stream's position past events not yet replayed.
		if err := h.catchUp(ctx, s, w, &last); err != nil {
			return nil
		}
	}

	heartbeat := time.NewTicker(h.opts.Heartbeat)
	defer heartbeat.Stop()
	var expired <-chan time.Time
	if !p.ExpiresAt.IsZero() {
		t := time.NewTimer(time.Until(p.ExpiresAt))
		defer t.Stop()
		expired = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-h.done:
			w.event(0, "shutdown", `{"reason":"the server is shutting down; reconnect with Last-Event-ID"}`)
			_ = w.end()
			return nil
		case <-expired:
			w.event(0, "token-expired", `{"reason":"the bearer token has expired; reconnect with a fresh token and Last-Event-ID"}`)
			_ = w.end()
			return nil
		case <-heartbeat.C:
			w.comment("keep-alive")
			if w.end() != nil {
				return nil
			}
		case r := <-s.ch:
			if err := w.send([]Record{*r}, &last); err != nil {
				return nil
			}
		case <-s.kicked:
			if err := h.catchUp(ctx, s, w, &last); err != nil {
				return nil
			}
		}
	}
}

// detach takes the stream's connection over from the HTTP server: it writes
// the answer's head and the replay itself, hands the connection to a
// detached stream and lets the request's goroutine and buffers go. nil when
// the connection cannot be taken over.
func (h *Hub) detach(c *gin.Context, s *stream, p *auth.Principal, replay []Record, last int64) *detached {
	conn, rw, err := http.NewResponseController(c.Writer).Hijack()
	if err != nil {
		return nil
	}
	c.Abort()
	var b strings.Builder
	b.WriteString("HTTP/1.1 200 OK\r\n")
	hd := c.Writer.Header().Clone()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	// The body is the stream until the connection closes.
	hd.Set("Connection", "close")
	_ = hd.Write(&b)
	b.WriteString("\r\n: stream open\n\nretry: 3000\n\n")
	for i := range replay {
		writeRecord(&b, &replay[i], &last)
	}
	d := &detached{h: h, s: s, conn: conn, last: last}
	_ = rw.Flush() // nothing is buffered yet; the head goes straight to the connection
	if !d.write(b.String()) {
		return d // closed and released by write
	}
	h.mu.Lock()
	s.d = d
	h.mu.Unlock()
	// What arrived while the request was being answered.
	for {
		select {
		case r := <-s.ch:
			d.offer(r)
			continue
		default:
		}
		break
	}
	select {
	case <-s.kicked: // the buffer overflowed meanwhile
		d.kick()
	default:
	}
	if int64(len(replay)) == replayBatch {
		d.kick() // more to replay: read on from the log
	}
	if !p.ExpiresAt.IsZero() {
		d.mu.Lock()
		d.expiry = time.AfterFunc(time.Until(p.ExpiresAt), func() {
			d.end("token-expired", `{"reason":"the bearer token has expired; reconnect with a fresh token and Last-Event-ID"}`)
		})
		d.mu.Unlock()
	}
	select {
	case <-h.done:
		d.end("shutdown", `{"reason":"the server is shutting down; reconnect with Last-Event-ID"}`)
	default:
	}
	return d
}

// catchUp reads the log from last until it is exhausted, dropping what the
// buffer held (it is in the log too).
func (h *Hub) catchUp(ctx context.Context, s *stream, w *sse, last *int64) error {
	for {
	drain:
		for {
			select {
			case <-s.ch:
			default:
				break drain
			}
		}
		recs, err := since(ctx, h.db, s.audiences, *last, time.Now().Add(-h.opts.Retention), replayBatch)
		if err != nil {
			// The database is away: end the stream; the client reconnects
			// with its Last-Event-ID and gets a 503 until it is back.
			return err
		}
		if err := w.send(recs, last); err != nil {
			return err
		}
		if int64(len(recs)) < replayBatch {
			return nil
		}
	}
}

// sse writes the text/event-stream format.
type sse struct {
	w     *bufio.Writer
	flush func() error
}

func (s *sse) comment(text string) { _, _ = s.w.WriteString(": " + text + "\n\n") }

func (s *sse) retry(d time.Duration) {
	_, _ = s.w.WriteString("retry: " + strconv.FormatInt(d.Milliseconds(), 10) + "\n\n")
}

func (s *sse) event(id int64, typ, data string) {
	if id > 0 {
		_, _ = s.w.WriteString("id: " + strconv.FormatInt(id, 10) + "\n")
	}
	_, _ = s.w.WriteString("event: " + typ + "\ndata: " + data + "\n\n")
}

// send writes the records after last, in order, each once, and moves last.
func (s *sse) send(recs []Record, last *int64) error {
	for i := range recs {
		if recs[i].ID <= *last {
			continue
		}
		// Data is compact JSON (json.Marshal): one line, as the format needs.
		s.event(recs[i].ID, recs[i].Type, recs[i].Data)
		*last = recs[i].ID
	}
	return s.end()
}

func (s *sse) end() error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	return s.flush()
}
