package filestore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/ids"
	"github.com/agritrade/api/platform/logging"
	"github.com/agritrade/api/platform/procs"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
)

// Options configure a Service.
type Options struct {
	// BaseURL is the public base URL ("https://api.example.com").
	BaseURL string
	// Path is the download route under BaseURL, where the module that serves
	// files mounts them; the URLs in records point there (see ServeAt).
	Path string
	// MaxBytes caps one upload; 0 means no cap.
	MaxBytes int64
	// URLTTL is the lifetime of signed URLs; one hour when zero.
	URLTTL time.Duration
	// Signer signs download URLs.
	Signer *auth.Signer
	// Log receives what clients are not told.
	Log logrus.FieldLogger
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
	// SweepInterval is how often RunSweeper looks for abandoned uploads,
	// SweepAge how old they must be (see SweepAge); the defaults when zero.
	SweepInterval time.Duration
	SweepAge      time.Duration
	// ThumbSizes are the thumbnail sizes clients may ask for (thumb.Parse
	// grammar), ThumbMaxPixels the largest source (width x height) a
	// thumbnail is made of, ThumbConcurrency how many thumbnails this
	// replica makes at once; the defaults when empty or zero (thumbs.go).
	ThumbSizes       []string
	ThumbMaxPixels   int64
	ThumbConcurrency int
	// ThumbEager makes every size of an image right after it is stored
	// (files.thumb_eager), in the background, when a thumbnail slot is free.
	ThumbEager bool
}

// Service is module.Deps.Files: uploads, reads, archives and resolves files.
type Service struct {
	store  store
	db     *bun.DB
	blobs  Blobs
	opts   Options
	prefix string // BaseURL + Path
	thumbs *thumbs
	// types are the document kinds an upload may name (AcceptTypes); nil
	// accepts any non-empty one.
	types []string
}

// New builds a Service over a database and a blob store.
func New(bdb *bun.DB, blobs Blobs, o Options) *Service {
	if o.URLTTL <= 0 {
		o.URLTTL = time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = logrus.New()
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = DefaultSweepInterval
	}
	if o.SweepAge <= 0 {
		o.SweepAge = DefaultSweepAge
	}
	return &Service{
		store: store{db: bdb}, db: bdb, blobs: blobs, opts: o,
		prefix: strings.TrimRight(o.BaseURL, "/") + o.Path,
		thumbs: newThumbs(o),
	}
}

// ServeAt names the route that serves the files (path under BaseURL, such as
// "/system/v1/files"): the module that mounts the downloads tells, before it
// serves, so that the platform knows no module's routes.
func (s *Service) ServeAt(path string) {
	s.opts.Path = path
	s.prefix = strings.TrimRight(s.opts.BaseURL, "/") + path
}

// AcceptTypes names the document kinds an upload may name (its "type"
// field): a domain list, so the module that owns the uploads gives it at
// wiring, before it serves, as it names the download route (ServeAt). Until
// one does (a binary or a test without that module, such as logistics alone)
// every non-empty type is accepted: the platform knows no module's kinds, and
// refusing every upload would be the more surprising default.
func (s *Service) AcceptTypes(types ...string) {
	s.types = slices.Clone(types)
}

// Open builds the Service the configuration asks for: the local backend under
// files.dir (default <data_dir>/files) or the s3 backend.
func Open(ctx context.Context, cfg *config.Config, bdb *bun.DB, signer *auth.Signer, log logrus.FieldLogger) (*Service, error) {
	var (
		blobs Blobs
		err   error
	)
	switch cfg.Files.Backend {
	case "", "local":
		dir := cfg.Files.Dir
		if dir == "" {
			dir = filepath.Join(cfg.DataDir, "files")
		}
		blobs, err = NewLocal(dir)
	case "s3":
		s3 := cfg.Files.S3
		blobs, err = NewS3(ctx, S3Options{
			Endpoint: s3.Endpoint, Bucket: s3.Bucket, AccessKey: s3.AccessKey, SecretKey: s3.SecretKey,
			UseSSL: s3.UseSSL, Region: s3.Region, Prefix: s3.Prefix, PartSize: uint64(max(s3.PartSizeMB, 0)) << 20,
		})
	default:
		return nil, fmt.Errorf("files.backend %q: want local or s3", cfg.Files.Backend)
	}
	if err != nil {
		return nil, err
	}
	if err := CheckThumbSizes(cfg.Files.ThumbSizes); err != nil {
		return nil, err
	}
	return New(bdb, blobs, Options{
		BaseURL:  cfg.BaseURL,
		MaxBytes: cfg.Files.MaxUploadMB << 20,
		URLTTL:   cfg.Files.URLTTL,
		Signer:   signer,
		Log:      log,
		// Abandoned uploads are swept by RunSweeper, which the server runs.
		SweepInterval: cfg.Files.SweepInterval,
		SweepAge:      SweepAge(cfg),

		ThumbSizes:       cfg.Files.ThumbSizes,
		ThumbMaxPixels:   cfg.Files.ThumbMaxPixels,
		ThumbConcurrency: cfg.Files.ThumbConcurrency,
		ThumbEager:       cfg.Files.ThumbEager,
	}), nil
}

// MaxBytes is the upload limit in bytes (0: none).
func (s *Service) MaxBytes() int64 { return s.opts.MaxBytes }

// Ping tells whether the blob store answers (readiness).
func (s *Service) Ping(ctx context.Context) error { return s.blobs.Ping(ctx) }

// Put streams an upload into the store and records it. The fields are
// checked first (400 listing every failing field, 403 for an organisation
// the caller does not belong to); the content type is sniffed from the first
// bytes before anything is stored (415 when the bucket refuses it); the body
// is hashed and counted on its way to the store (413 over the limit). An
// error of the body (an *apierr.Error is answered as it is) aborts the upload:
// nothing is stored and nothing is recorded.
func (s *Service) Put(ctx context.Context, p *auth.Principal, in PutInput) (*Record, error) {
	if p == nil {
		return nil, apierr.Unauthorized("uploading needs a bearer token")
	}
	u, err := validateInput(p, in, s.types)
	if err != nil {
		if in.Rest == nil {
			return nil, err
		}
		// Fields may still come after the file: only what is wrong with the
		// values already given fails now; what is missing waits for Rest.
		if err := withoutMissing(err); err != nil {
			return nil, err
		}
	}
	head := make([]byte, HeadLen)
	n, err := io.ReadFull(in.Body, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, s.bodyError(err)
	}
	head = head[:n]
	if n == 0 {
		return nil, errEmptyFile()
	}
	contentType, executable := Sniff(head)
	if slices.Contains(Buckets, u.bucket) {
		if err := refused(u.bucket, contentType, executable); err != nil {
			return nil, err
		}
	}
	rec := s.newRecord(ctx, p, u.bucket, contentType)
	body := &uploadReader{r: io.MultiReader(bytes.NewReader(head), in.Body), hash: sha256.New(), max: s.opts.MaxBytes}
	size, err := s.blobs.Put(ctx, rec.Path, body)
	if err != nil {
		if body.err != nil {
			return nil, s.bodyError(body.err)
		}
		return nil, s.storeError(err)
	}
	// The record is what makes the bytes reachable: whatever fails from here
	// on removes them.
	discard := func(err error) (*Record, error) {
		if derr := s.blobs.Delete(context.WithoutCancel(ctx), rec.Path); derr != nil {
			s.opts.Log.WithError(derr).WithField("key", rec.Path).Error("could not remove the bytes of an unrecorded upload")
		}
		return nil, err
	}
	if in.Rest != nil {
		full, err := in.Rest()
		if err != nil {
			return discard(err)
		}
		full.Body = in.Body
		if u, err = validateInput(p, full, s.types); err != nil {
			return discard(err)
		}
		if err := refused(u.bucket, contentType, executable); err != nil {
			return discard(err)
		}
	}
	rec.Bucket, rec.Type, rec.Name, rec.OrganisationID, rec.Organisations = u.bucket, u.typ, u.name, u.org, u.orgs
	rec.Size = size
	bytesIn.Add(float64(size))
	rec.Hash = hex.EncodeToString(body.hash.Sum(nil))
	if err := s.store.insert(ctx, rec); err != nil {
		return discard(err)
	}
	s.sign(rec)
	logging.Ctx(ctx, s.opts.Log).WithFields(logrus.Fields{"file": rec.ID, "bucket": rec.Bucket, "type": rec.Type, "contentType": rec.ContentType, "bytes": rec.Size, "key": rec.Path}).Debug("file stored")
	s.startEagerThumbs(rec)
	return rec, nil
}

// errEmptyFile is the answer to an upload without a byte.
func errEmptyFile() error {
	return apierr.Invalid(apierr.FieldError{Path: "file", Code: "required", Message: "must not be empty", Data: map[string]any{}})
}

// refused answers 415 when the bucket does not take content sniffed as
// contentType (executable: a binary or a script).
func refused(bucket, contentType string, executable bool) error {
	if Accepts(bucket, contentType, executable) {
		return nil
	}
	return apierr.New(apierr.CodeUnsupportedMedia, "the %s bucket does not accept %s content", bucket, contentType)
}

// newRecord starts the record of a new file: its id and storage key. The key
// starts with the bucket when it is known; a file sent before its bucket
// waits under "incoming" (the record keeps the key).
func (s *Service) newRecord(ctx context.Context, p *auth.Principal, bucket, contentType string) *Record {
	now := s.opts.Now().UTC()
	id := ids.New(ctx)
	prefix := bucket
	if !slices.Contains(Buckets, prefix) {
		prefix = "incoming"
	}
	return &Record{
		ID: id, Path: fmt.Sprintf("%s/%04d/%02d/%s", prefix, now.Year(), int(now.Month()), id),
		ContentType: contentType, UserID: p.UserID, UserName: p.Name, Tags: []string{},
		Status: StatusActive, CreatedAt: now.Truncate(time.Second),
	}
}

// uploadReader hashes and counts the body on its way to the store and stops
// it past the limit. err keeps the body's own failure apart from the store's.
type uploadReader struct {
	r    io.Reader
	hash hash.Hash
	n    int64
	max  int64
	err  error
}

// ErrTooLarge is the body error of an upload over the limit.
var ErrTooLarge = errors.New("filestore: upload over the size limit")

func (u *uploadReader) Read(p []byte) (int, error) {
	if u.err != nil {
		return 0, u.err
	}
	n, err := u.r.Read(p)
	u.n += int64(n)
	if u.max > 0 && u.n > u.max {
		u.err = ErrTooLarge
		return 0, u.err
	}
	_, _ = u.hash.Write(p[:n])
	if err != nil && !errors.Is(err, io.EOF) {
		u.err = err
	}
	return n, err
}

// readAhead is the size of the chunks WriteTo passes along; readChunks of
// them are in flight (one being read, one written, one hashed): 3 MiB an
// upload, whatever its size.
const readAhead = 1 << 20

const readChunks = 3

// WriteTo is how the local store takes the body (io.CopyBuffer prefers it):
// a pipeline of three goroutines, a chunk at a time. One reads the body
// ahead, this one writes the chunk before, a third hashes the one before
// that, so that on two cores the network reads and the multipart parsing,
// the file writes and SHA-256 run alongside each other instead of taking
// turns, and each write is a whole chunk rather than the few KiB a multipart
// part hands out at a time. With SHA-NI the hash costs about what reading the
// socket and the part costs, and the writes into the page cache less than
// half of either: hashing on the reading side made the reader the busy one,
// hashing on the writing side the writer (a 50 MiB upload, alternated
// rounds: ~650 MB/s with the hash beside the reads, ~740 beside the writes,
// ~790 on its own). A chunk is written once full (or at the end): 1 MiB
// takes minutes on the slowest links, far less than the sweeper's age for a
// file that is still being written. WriteTo returns only once the reading and
// hashing goroutines have stopped, so the body is never read, nor the hash
// written, after it returns. Errors are as Read's: the body's own in u.err,
// the writer's returned as they are.
func (u *uploadReader) WriteTo(w io.Writer) (int64, error) {
	if u.err != nil {
		return 0, u.err
	}
	// Three goroutines at once: on one processor they would take turns.
	procs.Raise()
	full := make(chan []byte, 1)
	toHash := make(chan []byte, readChunks)
	free := make(chan []byte, readChunks)
	for range readChunks {
		free <- alignedBuffer(readAhead) // whole blocks a direct write takes as they are
	}
	stop := make(chan struct{})
	hashed := make(chan struct{})
	go func() {
		defer close(hashed)
		for buf := range toHash {
			_, _ = u.hash.Write(buf)
			free <- buf[:cap(buf)] // never blocks: it holds every buffer
		}
	}()
	var readErr error // the reader's, read once full is closed
	go func() {
		defer close(full)
		for {
			var buf []byte
			select {
			case buf = <-free:
			case <-stop:
				return
			}
			n, err := io.ReadFull(u.r, buf)
			u.n += int64(n)
			if u.max > 0 && u.n > u.max {
				readErr = ErrTooLarge
				return
			}
			if n > 0 {
				select {
				case full <- buf[:n]:
				case <-stop:
					return
				}
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return
			}
			if err != nil {
				readErr = err
				return
			}
		}
	}()
	var written int64
	var werr error
	for buf := range full {
		if werr == nil {
			var n int
			n, werr = w.Write(buf)
			written += int64(n)
			if werr == nil {
				toHash <- buf // never blocks: it holds every buffer
				continue
			}
			close(stop)
		}
		free <- buf[:cap(buf)]
	}
	close(toHash)
	<-hashed
	if werr != nil {
		return written, werr
	}
	if readErr != nil {
		u.err = readErr
		return written, readErr
	}
	return written, nil
}

// bodyError turns a failure to read the upload into its answer.
func (s *Service) bodyError(err error) error {
	if e, ok := apierr.As(err); ok {
		return e
	}
	var mbe *http.MaxBytesError
	if errors.Is(err, ErrTooLarge) || errors.As(err, &mbe) {
		return apierr.New(apierr.CodePayloadTooLarge, "the file is larger than the upload limit of %d MiB", s.opts.MaxBytes>>20)
	}
	return apierr.Wrap(err, apierr.CodeBadRequest, "the upload was interrupted or could not be read")
}

// storeError answers 503 for a blob store that is down (IsUnavailable) and
// 500 for any other failure of it. Database errors are returned as they are:
// the error middleware classifies them (db.IsUnavailable).
func (s *Service) storeError(err error) error {
	if errors.Is(err, context.Canceled) {
		return apierr.Wrap(err, apierr.CodeBadRequest, "the upload was cancelled")
	}
	if IsUnavailable(err) {
		return apierr.Unavailable(err, "the file store")
	}
	return apierr.Internal(err)
}

// Get returns an active file that p may read; 404 otherwise.
func (s *Service) Get(ctx context.Context, p *auth.Principal, id string) (*Record, error) {
	rec, err := s.store.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if rec == nil || rec.Status != StatusActive || !rec.ReadableBy(p) {
		return nil, apierr.NotFound("file")
	}
	s.sign(rec)
	return rec, nil
}

// GetSigned returns an active file for the bearer of a signed URL token: a
// tampered, foreign or expired token answers 401, an archived file 404.
func (s *Service) GetSigned(ctx context.Context, id, token string) (*Record, error) {
	if s.opts.Signer == nil || s.opts.Signer.Verify(tokenResource(id), token, s.opts.Now()) != nil {
		return nil, apierr.Unauthorized("the download token is not valid or has expired")
	}
	rec, err := s.store.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if rec == nil || rec.Status != StatusActive {
		return nil, apierr.NotFound("file")
	}
	s.sign(rec)
	return rec, nil
}

// Archive archives an active file: allowed to its uploader or an admin, 404
// for anyone else, for an unknown id and for a file already archived.
func (s *Service) Archive(ctx context.Context, p *auth.Principal, id string) error {
	rec, err := s.store.get(ctx, id)
	if err != nil {
		return err
	}
	if rec == nil || rec.Status != StatusActive || !rec.ArchivableBy(p) {
		return apierr.NotFound("file")
	}
	ok, err := s.store.archive(ctx, id, p.UserID, s.opts.Now())
	if err != nil {
		return err
	}
	if !ok {
		return apierr.NotFound("file") // archived meanwhile by another request
	}
	logging.Ctx(ctx, s.opts.Log).WithField("file", id).Debug("file archived")
	return nil
}

// Read opens length bytes of a file's content from offset (length < 0: to
// the end). Callers have checked access with Get or GetSigned.
func (s *Service) Read(ctx context.Context, rec *Record, offset, length int64) (io.ReadCloser, error) {
	rc, err := s.blobs.Open(ctx, rec.Path, offset, length)
	if errors.Is(err, ErrNotExist) {
		// A record without bytes is damage, not a client error: log it loudly.
		s.opts.Log.WithField("file", rec.ID).WithField("key", rec.Path).Error("the bytes of an active file are missing")
		return nil, apierr.NotFound("file")
	}
	if err != nil {
		return nil, s.storeError(err)
	}
	logging.Ctx(ctx, s.opts.Log).WithFields(logrus.Fields{"file": rec.ID, "offset": offset, "length": length}).Debug("file read")
	return countingReadCloser{rc}, nil
}

// Resolve checks each reference exists, is active and readable by p, and
// returns the canonical refs in the same order. Field errors have paths
// relative to the list ("[1].id"); callers merge them with
// fields.At("files").Merge(errs). The refs are only meaningful when there are
// no field errors. err is for infrastructure failures only.
func (s *Service) Resolve(ctx context.Context, p *auth.Principal, refs []Ref) ([]Ref, []apierr.FieldError, error) {
	var f apierr.Fields
	if len(refs) > MaxResolveRefs {
		f.Add("", "max_items", fmt.Sprintf("must have at most %d files", MaxResolveRefs), map[string]any{"max": MaxResolveRefs, "actual": len(refs)})
		return nil, f.List(), nil
	}
	ids := make([]string, 0, len(refs))
	first := map[string]int{}
	for i, r := range refs {
		id := strings.TrimSpace(r.ID)
		fi := f.Index(i)
		switch {
		case id == "":
			fi.Add("id", "required", "is required", nil)
		case len(id) > 64:
			fi.Add("id", "not_found", "file not found", map[string]any{"id": truncate(id, 64)})
		default:
			if j, dup := first[id]; dup {
				fi.Add("id", "duplicate", fmt.Sprintf("is the same file as [%d]", j), map[string]any{"index": j})
				continue
			}
			first[id] = i
			ids = append(ids, id)
		}
	}
	found, err := s.store.getMany(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Ref, len(refs))
	for i, r := range refs {
		id := strings.TrimSpace(r.ID)
		if j, ok := first[id]; !ok || j != i {
			continue // reported above
		}
		rec := found[id]
		if rec == nil || rec.Status != StatusActive || !rec.ReadableBy(p) {
			f.Index(i).Add("id", "not_found", "file not found", map[string]any{"id": id})
			continue
		}
		rec.URL = s.urlOf(rec.ID)
		out[i] = rec.Ref()
	}
	if !f.Empty() {
		return nil, f.List(), nil
	}
	return out, nil, nil
}

// SignToken returns a download token for a file valid until exp.
func (s *Service) SignToken(id string, exp time.Time) string {
	return s.opts.Signer.Sign(tokenResource(id), exp)
}

// urlOf is the plain download URL of a file.
func (s *Service) urlOf(id string) string { return s.prefix + "/" + url.PathEscape(id) }

// tokenResource binds a token to one file.
func tokenResource(id string) string { return "file:" + id }

// sign fills the record's URLs: the plain one and the signed ones.
func (s *Service) sign(rec *Record) {
	rec.URL = s.urlOf(rec.ID)
	if s.opts.Signer == nil {
		rec.SignedURL, rec.SignedStreamURL = rec.URL, rec.URL+"?stream=1"
		return
	}
	token := url.QueryEscape(s.SignToken(rec.ID, s.opts.Now().Add(s.opts.URLTTL)))
	rec.SignedURL = rec.URL + "?token=" + token
	rec.SignedStreamURL = rec.URL + "?stream=1&token=" + token
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// withoutMissing drops the "required" entries of a validation error: with
// fields still to come after the file, a missing one is not yet an error.
// What is left (a value given but wrong) fails at once; nil when nothing is.
func withoutMissing(err error) error {
	e, ok := apierr.As(err)
	if !ok || e.Code != apierr.CodeValidation {
		return err
	}
	var f apierr.Fields
	for _, v := range e.Validation {
		if v.Code != "required" || v.Path == "file" {
			f.Add(v.Path, v.Code, v.Message, v.Data)
		}
	}
	return f.Err()
}
