package events

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// writeTimeout bounds each write to a detached stream's client: a client that
// takes nothing for that long is dropped (it reconnects with Last-Event-ID).
const writeTimeout = 10 * time.Second

// detached is a stream whose connection the hub took over from the HTTP
// server. While idle it has no goroutine and no buffers: what arrives is
// queued here and written by a short-lived goroutine, which ends once the
// queue is empty.
type detached struct {
	h    *Hub
	s    *stream
	conn net.Conn

	mu      sync.Mutex
	pending []*Record
	notes   []string
	final   string
	lagged  bool
	writing bool
	ended   bool
	last    int64
	expiry  *time.Timer
	once    sync.Once
}

func (d *detached) offer(r *Record) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended {
		return
	}
	if len(d.pending) >= streamBuffer {
		// Too far behind: read the log from the last id sent instead.
		d.pending, d.lagged = nil, true
	} else {
		d.pending = append(d.pending, r)
	}
	d.startLocked()
}

func (d *detached) kick() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.ended {
		d.lagged = true
		d.startLocked()
	}
}

func (d *detached) comment(text string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.ended && len(d.notes) < 4 {
		d.notes = append(d.notes, text)
		d.startLocked()
	}
}

// end writes a last event and closes the stream.
func (d *detached) end(typ, data string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.ended && d.final == "" {
		d.final = "event: " + typ + "\ndata: " + data + "\n\n"
		d.startLocked()
	}
}

func (d *detached) startLocked() {
	if !d.writing {
		d.writing = true
		go d.drain()
	}
}

// drain writes what is queued until nothing is, then ends.
func (d *detached) drain() {
	for {
		d.mu.Lock()
		pending, notes, final, lagged := d.pending, d.notes, d.final, d.lagged
		d.pending, d.notes, d.lagged = nil, nil, false
		if len(pending) == 0 && len(notes) == 0 && final == "" && !lagged {
			d.writing = false
			d.mu.Unlock()
			return
		}
		last := d.last
		d.mu.Unlock()

		var b strings.Builder
		for _, n := range notes {
			b.WriteString(": " + n + "\n\n")
		}
		if lagged {
			if !d.catchUp(&b, &last) {
				return
			}
		} else {
			for _, r := range pending {
				writeRecord(&b, r, &last)
			}
		}
		b.WriteString(final)
		if b.Len() > 0 && !d.write(b.String()) {
			return
		}
		d.mu.Lock()
		d.last = last
		d.mu.Unlock()
		if final != "" {
			d.close()
			return
		}
	}
}

// catchUp reads the log after last into b; false when the stream had to end.
func (d *detached) catchUp(b *strings.Builder, last *int64) bool {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		recs, err := since(ctx, d.h.db, d.s.audiences, *last, time.Now().Add(-d.h.opts.Retention), replayBatch)
		cancel()
		if err != nil {
			// The database is away: end the stream; the client reconnects with
			// its Last-Event-ID and is answered 503 until it is back.
			d.close()
			return false
		}
		for i := range recs {
			writeRecord(b, &recs[i], last)
		}
		if int64(len(recs)) < replayBatch {
			return true
		}
		if !d.write(b.String()) {
			return false
		}
		b.Reset()
	}
}

func (d *detached) write(text string) bool {
	_ = d.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := d.conn.Write([]byte(text)); err != nil {
		d.close()
		return false
	}
	return true
}

// close ends the stream once: the connection, the expiry timer, its place.
func (d *detached) close() {
	d.once.Do(func() {
		d.mu.Lock()
		d.ended, d.writing = true, false
		if d.expiry != nil {
			d.expiry.Stop()
		}
		d.mu.Unlock()
		_ = d.conn.Close()
		d.h.release(d.s)
	})
}

// writeRecord formats a record after last (once: ids only go up).
func writeRecord(b *strings.Builder, r *Record, last *int64) {
	if r.ID <= *last {
		return
	}
	b.WriteString("id: " + strconv.FormatInt(r.ID, 10) + "\nevent: " + r.Type + "\ndata: " + r.Data + "\n\n")
	*last = r.ID
}
