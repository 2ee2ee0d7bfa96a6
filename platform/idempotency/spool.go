package idempotency

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"mime"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agritrade/api/platform/fault"
)

// memSpool is the largest body kept in memory while it is hashed; larger
// bodies (uploads, imports) go to a temporary file, so a 100 MiB upload costs
// one 64 KiB buffer of memory, not 100 MiB.
const memSpool = 64 << 10

// spoolPattern names the spooled bodies in their directory.
const spoolPattern = "agritrade-idempotency-*"

// spoolMaxAge is the age past which a spooled body belongs to no request: each
// is removed when its request ends, so only a process that died leaves one,
// and none is read or written for a day by a live request.
const spoolMaxAge = 24 * time.Hour

// sweepSpools removes the spooled bodies in dir (the system's temporary
// directory when empty) last written before cutoff, and answers how many.
func sweepSpools(dir string, cutoff time.Time) int {
	if dir == "" {
		dir = os.TempDir()
	}
	names, err := filepath.Glob(filepath.Join(dir, spoolPattern))
	if err != nil {
		return 0
	}
	n := 0
	for _, name := range names {
		if st, err := os.Lstat(name); err == nil && st.Mode().IsRegular() && st.ModTime().Before(cutoff) && os.Remove(name) == nil {
			n++
		}
	}
	return n
}

// spool is a request body read to its end, hashed, and ready to be read again
// by the handler.
type spool struct {
	sum  [sha256.Size]byte
	mem  []byte
	file *os.File
}

// errTooLarge says the body went past the spool's bound.
var errTooLarge = errors.New("request body over the largest any route accepts")

// readSpool reads r to its end (at most max bytes) and hashes it with the
// content type (requestHash). When the body cannot be read (a read that
// failed, a body over max) it answers, as pass, what it read so far followed
// by the rest of r, so that the handler meets the same failure as it would
// without a key. Any other error (no temporary space) is the server's.
func readSpool(r io.Reader, contentType string, sizeHint, max int64, dir string) (s *spool, pass io.Reader, err error) {
	h := sha256.New()
	var body io.Writer = h
	var rw *replacingWriter
	mt := writeContentType(h, contentType)
	if b, ok := normalisedBoundary(mt, contentType); ok {
		rw = &replacingWriter{w: h, pat: []byte("--" + b)}
		body = rw
	}
	capacity := memSpool + 1
	if sizeHint >= 0 && sizeHint < int64(capacity) {
		capacity = int(sizeHint) + 1 // one more byte to see the end without growing
	}
	buf := make([]byte, 0, capacity)
	for len(buf) <= memSpool {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, len(buf))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			if int64(len(buf)) > max {
				return nil, io.MultiReader(bytes.NewReader(buf), r), errTooLarge
			}
			_, _ = body.Write(buf)
			rw.flush()
			s := &spool{mem: buf}
			h.Sum(s.sum[:0])
			return s, nil, nil
		}
		if err != nil {
			return nil, io.MultiReader(bytes.NewReader(buf), errReader{err}), err
		}
	}
	f, err := os.CreateTemp(dir, spoolPattern)
	if err != nil {
		return nil, nil, err
	}
	s = &spool{file: f}
	if _, err := f.Write(buf); err != nil {
		s.close()
		return nil, nil, err
	}
	_, _ = body.Write(buf)
	src := &fault.Source{R: io.LimitReader(r, max-int64(len(buf))+1)}
	n, err := io.Copy(io.MultiWriter(f, body), src)
	if err != nil && src.Err == nil {
		s.close() // the temporary file could not be written
		return nil, nil, err
	}
	if err == nil && int64(len(buf))+n > max {
		err = errTooLarge
	}
	if _, serr := f.Seek(0, io.SeekStart); serr != nil {
		s.close()
		return nil, nil, serr
	}
	if err != nil {
		// Every byte read is in the file (io.Copy writes what it read before
		// it reports the read's error): the handler reads them, then the rest.
		return s, io.MultiReader(f, r), err
	}
	rw.flush()
	h.Sum(s.sum[:0])
	return s, nil, nil
}

// reader is the body the handler reads.
func (s *spool) reader() io.Reader {
	if s.file != nil {
		return s.file
	}
	return bytes.NewReader(s.mem)
}

// close removes the temporary file, if any.
func (s *spool) close() {
	if s == nil || s.file == nil {
		return
	}
	_ = s.file.Close()
	_ = os.Remove(s.file.Name())
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// writeContentType hashes the content type: the media type alone for a
// multipart body, whose boundary changes each time a client builds the form,
// otherwise the header as sent. It answers the media type.
func writeContentType(h hash.Hash, contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || !strings.HasPrefix(mt, "multipart/") {
		_, _ = io.WriteString(h, contentType)
		_, _ = h.Write([]byte{0})
		return mt
	}
	_, _ = io.WriteString(h, mt)
	_, _ = h.Write([]byte{0})
	return mt
}

// minBoundary is the shortest multipart boundary taken out of the hash: clients
// draw theirs at random (Go 60 hex digits, browsers 16 random characters after
// a prefix), and content can hold such a string only by chance, so replacing
// it confuses no two different forms; a short boundary could also match file
// bytes, so such bodies are hashed as they are.
const minBoundary = 16

// normalisedBoundary answers the boundary of a multipart body when it is long
// enough to be replaced in the hash: the same form sent again with a new
// boundary (an app that rebuilds its FormData to retry) is the same request.
func normalisedBoundary(mt, contentType string) (string, bool) {
	if !strings.HasPrefix(mt, "multipart/") {
		return "", false
	}
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil || len(params["boundary"]) < minBoundary {
		return "", false
	}
	return params["boundary"], true
}

// replacingWriter writes to w with every occurrence of pat replaced by a
// fixed marker, across writes: it holds back the last len(pat)-1 bytes, which
// could begin an occurrence that the next write completes.
type replacingWriter struct {
	w     io.Writer
	pat   []byte
	carry []byte
}

var boundaryMarker = []byte{0, 'B', 0}

func (r *replacingWriter) Write(p []byte) (int, error) {
	data := p
	if len(r.carry) > 0 {
		data = append(r.carry, p...)
	}
	i := 0
	for {
		j := bytes.Index(data[i:], r.pat)
		if j < 0 {
			break
		}
		_, _ = r.w.Write(data[i : i+j])
		_, _ = r.w.Write(boundaryMarker)
		i += j + len(r.pat)
	}
	rest := data[i:]
	keep := min(len(rest), len(r.pat)-1)
	_, _ = r.w.Write(rest[:len(rest)-keep])
	r.carry = append(r.carry[:0:0], rest[len(rest)-keep:]...)
	return len(p), nil
}

// flush writes what was held back (the end of the body).
func (r *replacingWriter) flush() {
	if r == nil {
		return
	}
	_, _ = r.w.Write(r.carry)
	r.carry = nil
}
