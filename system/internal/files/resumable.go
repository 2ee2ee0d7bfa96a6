package files

// Resumable uploads (tus 1.0.0; API.md "Resumable uploads"): the service and
// its store. The protocol's HTTP side is tus.go.
//
// State is a row of system_uploads, so that any replica carries on after a
// restart or a switch; the bytes are staged in the file store (local or S3)
// as staging.go says, written once and never copied: at the end the file
// store adopts them as a file (filestore.Service.Adopt: the same checks,
// sniffed type per bucket, limit, record, as a multipart upload). A PATCH is
// all or nothing: its chunk is stored whole or not at all (a broken
// connection, a checksum mismatch, bytes past the length leave nothing that
// counts), so an offset is always the sum of whole chunks, and no byte is
// held in memory beyond a copy buffer.
//
// One replica writes an upload at a time: a PATCH takes a lease (lease_token,
// lease_until) with a conditional UPDATE, renews it while it runs and gives it
// back at the end; a second writer meanwhile gets 423 Locked (tus clients
// retry it). A replica that dies mid-PATCH holds the lease at most leaseTTL.

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/ids"
	"github.com/agritrade/api/platform/logging"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
)

// leaseTTL is how long a PATCH holds its upload without renewing; it renews
// every leaseTTL/3. Short, because a replica that dies mid-PATCH keeps the
// upload locked that long, and clients give up retrying a 423 after their
// retry delays (README suggests ~19 s of them).
const leaseTTL = 15 * time.Second

// uploadRow is an upload as stored.
type uploadRow struct {
	bun.BaseModel  `bun:"table:system_uploads"`
	ID             string     `bun:"id,pk"`
	UserID         string     `bun:"user_id"`
	Bucket         string     `bun:"bucket"`
	Type           string     `bun:"type"`
	Name           string     `bun:"name"`
	OrganisationID string     `bun:"organisation_id"`
	Organisations  string     `bun:"organisations"`
	Metadata       string     `bun:"metadata"`
	Length         int64      `bun:"length"`
	Received       int64      `bun:"received"`
	Parts          int        `bun:"parts"`
	FileID         string     `bun:"file_id"`
	FileKey        string     `bun:"file_key"`
	MultipartID    string     `bun:"multipart_id"`
	MultipartParts string     `bun:"multipart_parts"`
	HashState      string     `bun:"hash_state"`
	LeaseToken     string     `bun:"lease_token"`
	LeaseUntil     *time.Time `bun:"lease_until"`
	CreatedAt      time.Time  `bun:"created_at"`
	ExpiresAt      time.Time  `bun:"expires_at"`
}

// partRow is one stored chunk of an upload.
type partRow struct {
	bun.BaseModel `bun:"table:system_upload_parts"`
	UploadID      string `bun:"upload_id,pk"`
	Seq           int    `bun:"seq,pk"`
	Key           string `bun:"key"`
	Size          int64  `bun:"size"`
}

// Resumable is the resumable upload service.
type Resumable struct {
	db    *bun.DB
	files *filestore.Service
	ttl   time.Duration
	log   logrus.FieldLogger
	// Now is the clock (tests move it past the expiry).
	Now func() time.Time
}

// NewResumable builds the service; ttl is files.resumable_ttl.
func NewResumable(db *bun.DB, files *filestore.Service, ttl time.Duration, log logrus.FieldLogger) *Resumable {
	return &Resumable{db: db, files: files, ttl: ttl, log: log, Now: time.Now}
}

// MaxBytes is the largest upload (0: none).
func (r *Resumable) MaxBytes() int64 { return r.files.MaxBytes() }

// Create checks the fields and the length and records a new upload. The
// fields are those of the multipart upload form, checked the same way.
func (r *Resumable) Create(ctx context.Context, p *auth.Principal, length int64, metadata string) (*uploadRow, error) {
	if limit := r.files.MaxBytes(); limit > 0 && length > limit {
		return nil, apierr.New(apierr.CodePayloadTooLarge, "the upload is larger than the limit of %d MiB", limit>>20)
	}
	if length == 0 {
		return nil, apierr.Invalid(apierr.FieldError{Path: "file", Code: "required", Message: "must not be empty", Data: map[string]any{}})
	}
	in, err := metadataInput(metadata)
	if err != nil {
		return nil, err
	}
	if err := r.files.Check(p, in); err != nil {
		return nil, err
	}
	orgs, err := json.Marshal(nonNil(in.Organisations))
	if err != nil {
		return nil, err
	}
	now := r.Now().UTC()
	row := &uploadRow{
		ID: ids.New(ctx), UserID: p.UserID, Bucket: in.Bucket, Type: in.Type, Name: in.Name,
		OrganisationID: in.OrganisationID, Organisations: string(orgs), Metadata: metadata, Length: length,
		CreatedAt: now, ExpiresAt: now.Add(r.ttl).Truncate(time.Second),
		FileKey: r.files.ReserveKey(p, in.Bucket), MultipartParts: "[]",
	}
	if _, err := r.db.NewInsert().Model(row).Exec(ctx); err != nil {
		return nil, err
	}
	logging.Ctx(ctx, r.log).WithFields(logrus.Fields{"upload": row.ID, "length": length, "bucket": in.Bucket}).Debug("resumable upload created")
	return row, nil
}

// Get returns the caller's upload; 404 for an unknown, expired or foreign one.
func (r *Resumable) Get(ctx context.Context, p *auth.Principal, id string) (*uploadRow, error) {
	var row uploadRow
	err := r.db.NewSelect().Model(&row).Where("id = ?", id).Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apierr.NotFound("upload")
	}
	if err != nil {
		return nil, err
	}
	if p == nil || row.UserID != p.UserID || !row.ExpiresAt.After(r.Now()) {
		return nil, apierr.NotFound("upload")
	}
	return &row, nil
}

// Chunk is the body of one PATCH.
type Chunk struct {
	// Offset is Upload-Offset: where the client says the chunk starts.
	Offset int64
	Body   io.Reader
	// Length is Content-Length, -1 when unknown.
	Length int64
	// Checksum, when set, is the SHA-256 the chunk must have (Upload-Checksum).
	Checksum []byte
}

// Swept counts what one expiry sweep removed.
type Swept struct {
	Uploads int
	Bytes   int64
}

// Sweep removes the uploads past their expiry (files.resumable_ttl), bytes
// and rows, except one being written right now (its lease is live; the next
// sweep takes it). Replicas sweeping at once remove each upload once or
// twice, harmlessly.
func (r *Resumable) Sweep(ctx context.Context) (Swept, error) {
	var got Swept
	now := r.Now().UTC()
	var rows []uploadRow
	err := r.db.NewSelect().Model(&rows).Column("id", "received", "file_id").
		Where("expires_at <= ?", now).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("lease_until IS NULL").WhereOr("lease_until < ?", now)
		}).Limit(500).Scan(ctx)
	if err != nil {
		return got, err
	}
	for _, row := range rows {
		if err := r.remove(ctx, row.ID); err != nil {
			return got, err
		}
		got.Uploads++
		if row.FileID == "" {
			got.Bytes += row.Received
		}
	}
	return got, nil
}

// Run sweeps expired uploads every interval until ctx ends; a failure is
// logged and tried again at the next tick.
func (r *Resumable) Run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		got, err := r.Sweep(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			r.log.WithError(err).Warn("sweeping expired resumable uploads failed; trying again at the next tick")
		case got.Uploads > 0:
			r.log.WithField("removed", got.Uploads).WithField("bytes", got.Bytes).Info("removed expired resumable uploads")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// lease is a PATCH's or a termination's hold on one upload.
type lease struct {
	r      *Resumable
	id     string
	token  string
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	// gone is set when a renewal found the lease taken over.
	gone atomic.Bool
}

// lock takes the upload's lease: 404 when the caller cannot reach the
// upload, 423 when another request holds it.
func (r *Resumable) lock(ctx context.Context, p *auth.Principal, id string) (*lease, error) {
	if p == nil {
		return nil, apierr.NotFound("upload")
	}
	token := randomHex(16)
	now := r.Now().UTC()
	res, err := r.db.NewUpdate().Model((*uploadRow)(nil)).
		Set("lease_token = ?", token).
		Set("lease_until = ?", now.Add(leaseTTL)).
		Where("id = ?", id).Where("user_id = ?", p.UserID).Where("expires_at > ?", now).
		WhereGroup(" AND ", func(q *bun.UpdateQuery) *bun.UpdateQuery {
			return q.Where("lease_until IS NULL").WhereOr("lease_until < ?", now)
		}).Exec(ctx)
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		if _, gerr := r.Get(ctx, p, id); gerr != nil {
			return nil, gerr
		}
		return nil, conflict(http.StatusLocked, "the upload is being written by another request; try again shortly")
	}
	l := &lease{r: r, id: id, token: token, done: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancel(ctx)
	go l.renew()
	return l, nil
}

// renew extends the lease every leaseTTL/3; a lease found taken over (this
// replica paused past its expiry) cancels the request's work, and so does
// one this replica could not renew for most of leaseTTL (the database out
// of reach): it stops writing before another request may take the upload
// over, since a local upload's bytes are written in place.
func (l *lease) renew() {
	t := time.NewTicker(leaseTTL / 3)
	defer t.Stop()
	renewed := time.Now()
	for {
		select {
		case <-l.done:
			return
		case <-t.C:
		}
		res, err := l.r.db.NewUpdate().Model((*uploadRow)(nil)).
			Set("lease_until = ?", l.r.Now().UTC().Add(leaseTTL)).
			Where("id = ?", l.id).Where("lease_token = ?", l.token).Exec(l.ctx)
		if err != nil {
			if time.Since(renewed) >= leaseTTL/2 {
				l.gone.Store(true)
				l.cancel()
				return
			}
			continue // the next tick tries again; the lease is still valid for a while
		}
		renewed = time.Now()
		if n, _ := res.RowsAffected(); n != 1 {
			l.gone.Store(true)
			l.cancel()
			return
		}
	}
}

// set is one more column an advance writes.
type set struct {
	col string
	val any
}

// advance records n more bytes (and the columns of sets: the hash state,
// the parts, the finished file) under this lease; a lease taken over
// meanwhile updates nothing.
func (l *lease) advance(ctx context.Context, db bun.IDB, row *uploadRow, n int64, sets ...set) error {
	q := db.NewUpdate().Model((*uploadRow)(nil)).
		Set("received = received + ?", n).
		Set("parts = parts + 1")
	for _, s := range sets {
		q = q.Set("? = ?", bun.Ident(s.col), s.val)
	}
	res, err := q.Where("id = ?", row.ID).Where("lease_token = ?", l.token).Where("received = ?", row.Received).
		Exec(ctx)
	if err != nil {
		return err
	}
	if k, err := res.RowsAffected(); err != nil || k != 1 {
		l.gone.Store(true)
		return errLeaseLost
	}
	return nil
}

var errLeaseLost = errors.New("resumable upload: lease taken over")

// lost answers 423 for work cut short because the lease went elsewhere.
func (l *lease) lost(err error) error {
	if l.gone.Load() || errors.Is(err, errLeaseLost) {
		return conflict(http.StatusLocked, "the upload was taken over by another request; ask its offset again")
	}
	return err
}

// release gives the lease back.
func (l *lease) release() {
	close(l.done)
	l.cancel()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), 5*time.Second)
	defer cancel()
	_, err := l.r.db.NewUpdate().Model((*uploadRow)(nil)).
		Set("lease_token = ''").Set("lease_until = NULL").
		Where("id = ?", l.id).Where("lease_token = ?", l.token).Exec(ctx)
	if err != nil {
		l.r.log.WithError(err).WithField("upload", l.id).Warn("could not release an upload's lease; it expires by itself")
	}
}

// conflict is an error with a tus status (409, 412, 423, 460) in the
// project's error body.
func conflict(status int, format string, args ...any) *apierr.Error {
	code := apierr.CodeConflict
	if status == http.StatusPreconditionFailed || status == statusChecksumMismatch {
		code = apierr.CodeBadRequest
	}
	e := apierr.New(code, format, args...)
	e.HTTPStatus = status
	return e
}

// statusChecksumMismatch is tus's answer to a chunk whose checksum differs.
const statusChecksumMismatch = 460

func overLength(row *uploadRow) error {
	return apierr.New(apierr.CodePayloadTooLarge, "the chunk goes past the upload's length of %d bytes", row.Length)
}

// chunkReader is a PATCH body on its way to the store: it stops past the
// upload's length (413) and, at the end, fails a checksum mismatch (460),
// so that the store keeps nothing of a refused chunk.
type chunkReader struct {
	r    io.Reader
	left int64
	row  *uploadRow
	hash hash.Hash
	want []byte
	// run, when set, is the whole upload's running SHA-256 (join).
	run hash.Hash
	// exact: the chunk must end at the upload's length.
	exact bool
	// err is the chunk's own refusal, kept apart from the store's.
	err error
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		c.err = err
	}
	return n, err
}

func (c *chunkReader) read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return 0, overLength(c.row)
	}
	if c.hash != nil {
		_, _ = c.hash.Write(p[:n])
	}
	if c.run != nil {
		_, _ = c.run.Write(p[:n])
	}
	if errors.Is(err, io.EOF) {
		if c.hash != nil && !bytes.Equal(c.hash.Sum(nil), c.want) {
			return n, conflict(statusChecksumMismatch, "the chunk does not match its Upload-Checksum")
		}
		if c.exact && c.left != 0 {
			return n, apierr.BadRequest("the chunk ended %d bytes before the upload's length", c.left)
		}
		return n, io.EOF
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return n, overLength(c.row)
		}
		return n, apierr.Wrap(err, apierr.CodeBadRequest, "the chunk was interrupted or could not be read")
	}
	return n, nil
}

// partsReader reads an upload's chunks in order, one open at a time.
type partsReader struct {
	ctx   context.Context
	files *filestore.Service
	keys  []string
	cur   io.ReadCloser
}

func (p *partsReader) Read(b []byte) (int, error) {
	for {
		if p.cur == nil {
			if len(p.keys) == 0 {
				return 0, io.EOF
			}
			rc, err := p.files.OpenScratch(p.ctx, p.keys[0])
			if err != nil {
				return 0, err
			}
			p.cur, p.keys = rc, p.keys[1:]
		}
		n, err := p.cur.Read(b)
		if errors.Is(err, io.EOF) {
			_ = p.cur.Close()
			p.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err != nil {
			p.Close()
			if filestore.IsUnavailable(err) {
				return n, apierr.Unavailable(err, "the file store")
			}
			return n, apierr.Internal(err)
		}
		return n, nil
	}
}

// Close closes the chunk being read, when the reader stops before the end.
func (p *partsReader) Close() {
	if p.cur != nil {
		_ = p.cur.Close()
		p.cur = nil
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
