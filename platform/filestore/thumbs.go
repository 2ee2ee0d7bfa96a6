package filestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/fault"
	"github.com/agritrade/api/platform/filestore/thumb"
	"golang.org/x/sync/singleflight"
)

// Thumbnails (API.md "Thumbnails"). A thumbnail is made the first time a
// (file, size) is asked for, stored in the blob store beside its file, and
// from then on served like a file: a derived Record whose Path is the
// thumbnail's key, so Read, ranges and entity tags work unchanged. It has the
// file's permissions because callers reach it only through the file's record
// (Get or GetSigned), and an archived file's thumbnails answer 404 with it;
// their bytes stay, like the file's.
//
// Making one holds a decoded source in memory (up to about 250 MB at the
// default pixel limit, see thumb.Make). A burst of first requests, for many
// images or sizes at once, must not add those up: one replica makes at most
// files.thumb_concurrency thumbnails at a time (default 2), the others wait
// their turn (at most thumbTimeout, then 503). Requests for the same
// thumbnail share one making (singleflight).

// Defaults of the thumbnail settings, for a Service built without them.
const (
	DefaultThumbMaxPixels   = 50_000_000
	DefaultThumbConcurrency = 2
)

// DefaultThumbSizes are the sizes allowed when none are configured.
var DefaultThumbSizes = []string{"100x100", "300x300", "600x0", "1200x0"}

// thumbTimeout bounds one making, the wait for a slot included. It runs
// detached from the request that started it (others may share its result,
// and a thumbnail made for a client that left is still kept for the next).
const thumbTimeout = time.Minute

// thumbs is the Service's thumbnail state.
type thumbs struct {
	sizes     map[string]thumb.Spec // by the text a client sends
	allowed   []string              // as configured, for the error message
	maxPixels int64
	slots     chan struct{} // a semaphore: one token per making in progress
	flight    singleflight.Group

	// eager makes every size of an image as soon as it is stored.
	eager bool
	// pending holds, per source key, a channel closed when its eager making
	// ends, so that a request arriving meanwhile waits for it instead of
	// decoding the same photo a second time.
	pending sync.Map
	mu      sync.Mutex // guards closed and wg.Add against Close's Wait
	closed  bool
	wg      sync.WaitGroup
	running atomic.Int64 // eager makings in progress, for WaitThumbnails
}

func newThumbs(o Options) *thumbs {
	t := &thumbs{sizes: map[string]thumb.Spec{}, maxPixels: o.ThumbMaxPixels, eager: o.ThumbEager}
	if t.maxPixels <= 0 {
		t.maxPixels = DefaultThumbMaxPixels
	}
	n := o.ThumbConcurrency
	if n <= 0 {
		n = DefaultThumbConcurrency
	}
	t.slots = make(chan struct{}, n)
	sizes := o.ThumbSizes
	if len(sizes) == 0 {
		sizes = DefaultThumbSizes
	}
	for _, s := range sizes {
		spec, err := thumb.Parse(s)
		if err != nil {
			continue // Open refuses them (CheckThumbSizes); New keeps the valid ones
		}
		t.sizes[s] = spec
		t.allowed = append(t.allowed, s)
	}
	return t
}

// CheckThumbSizes refuses a configuration naming a size thumb.Parse does not read.
func CheckThumbSizes(sizes []string) error {
	for _, s := range sizes {
		if _, err := thumb.Parse(s); err != nil {
			return errors.New("files.thumb_sizes: " + err.Error())
		}
	}
	return nil
}

// ThumbSpec checks the `thumb` query value for a file: 400 naming `thumb`
// for a size that is not configured, or for a file that is not a JPEG, PNG,
// GIF or WebP image.
func (s *Service) ThumbSpec(rec *Record, raw string) (thumb.Spec, error) {
	spec, ok := s.thumbs.sizes[raw]
	if !ok {
		var f apierr.Fields
		f.OneOf("thumb", raw, s.thumbs.allowed...)
		return thumb.Spec{}, f.Err()
	}
	if !isThumbSource(rec.ContentType) {
		return thumb.Spec{}, apierr.Invalid(apierr.FieldError{
			Path: "thumb", Code: "not_image", Message: "the file is not a JPEG, PNG, GIF or WebP image",
			Data: map[string]any{"contentType": rec.ContentType},
		})
	}
	return spec, nil
}

func isThumbSource(contentType string) bool {
	for _, t := range thumb.Sources {
		if contentType == t {
			return true
		}
	}
	return false
}

// ThumbETag is the entity tag of a thumbnail: the file's content hash and
// the size. It is known without touching the blob store, so a revalidation
// (If-None-Match) costs nothing.
func ThumbETag(rec *Record, spec thumb.Spec) string { return `"` + thumbHash(rec, spec) + `"` }

func thumbHash(rec *Record, spec thumb.Spec) string { return rec.Hash + "-" + spec.String() }

// thumbKey is where a thumbnail lives: beside its file, named by the size
// and the format ("images/2026/11/<id>.thumb-300x300.jpg"). Everything in
// it is derived from the file and the size, so every replica computes the
// same key.
func thumbKey(rec *Record, spec thumb.Spec, contentType string) string {
	return rec.Path + ".thumb-" + spec.String() + thumb.Ext(contentType)
}

// thumbTypes are the formats a thumbnail of a source may have, the likelier
// first (each is one Stat on a hit): a JPEG is never transparent, a PNG
// often is (logos, drawings), a GIF or WebP seldom.
func thumbTypes(source string) []string {
	switch source {
	case thumb.JPEG:
		return []string{thumb.JPEG}
	case thumb.PNG:
		return []string{thumb.PNG, thumb.JPEG}
	default:
		return []string{thumb.JPEG, thumb.PNG}
	}
}

// Thumbnail answers the record of rec's thumbnail of spec (checked by
// ThumbSpec), making and storing it first when it is not stored yet: 415
// for a source over the pixel limit or that does not decode. Serve it with
// Read like any record; its ETag is ThumbETag.
func (s *Service) Thumbnail(ctx context.Context, rec *Record, spec thumb.Spec) (*Record, error) {
	if t, err := s.storedThumb(ctx, rec, spec); t != nil || err != nil {
		return t, err
	}
	if done, ok := s.thumbs.pending.Load(rec.Path); ok {
		// The photo's sizes are being made since its upload: wait for them.
		select {
		case <-ctx.Done():
			return nil, apierr.Wrap(ctx.Err(), apierr.CodeBadRequest, "the request ended while its thumbnail was made")
		case <-done.(chan struct{}):
		}
		if t, err := s.storedThumb(ctx, rec, spec); t != nil || err != nil {
			return t, err
		}
	}
	ch := s.thumbs.flight.DoChan(rec.Path+"|"+spec.String(), func() (_ any, err error) {
		// DoChan re-raises a panic in a goroutine of its own, where nothing
		// can recover it: a decoder tripping over hostile bytes would end the
		// process. It becomes this request's 500 instead.
		defer func() {
			if p := recover(); p != nil {
				err = apierr.Internal(fmt.Errorf("making a thumbnail of file %s: panic: %v", rec.ID, p))
			}
		}()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), thumbTimeout)
		defer cancel()
		return s.makeThumb(ctx, rec, spec)
	})
	select {
	case <-ctx.Done():
		return nil, apierr.Wrap(ctx.Err(), apierr.CodeBadRequest, "the request ended while its thumbnail was made")
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*Record), nil
	}
}

// storedThumb answers the stored thumbnail, or nil when there is none yet.
func (s *Service) storedThumb(ctx context.Context, rec *Record, spec thumb.Spec) (*Record, error) {
	for _, ct := range thumbTypes(rec.ContentType) {
		key := thumbKey(rec, spec, ct)
		size, err := s.blobs.Stat(ctx, key)
		if err == nil {
			return thumbRecord(rec, spec, key, ct, size), nil
		}
		if !errors.Is(err, ErrNotExist) {
			return nil, s.storeError(err)
		}
	}
	return nil, nil
}

// makeThumb is the one making of a (file, size) on this replica: wait for a
// slot, look again (a making that finished meanwhile), read the source,
// make, store.
func (s *Service) makeThumb(ctx context.Context, rec *Record, spec thumb.Spec) (*Record, error) {
	waited := time.Now()
	select {
	case s.thumbs.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, apierr.Unavailable(ctx.Err(), "thumbnail making (busy)")
	}
	defer func() { <-s.thumbs.slots }()
	thumbWait.Observe(time.Since(waited).Seconds())
	if t, err := s.storedThumb(ctx, rec, spec); t != nil || err != nil {
		return t, err
	}
	made, err := s.makeSizes(ctx, rec, []thumb.Spec{spec})
	if err != nil {
		return nil, err
	}
	return made[0], nil
}

// makeSizes makes and stores thumbnails of rec in the given sizes from one
// read and one decode of the source (thumb.MakeAll), and answers their
// records in the same order: 415 for a source over the pixel limit or that
// does not decode. The caller holds a slot.
func (s *Service) makeSizes(ctx context.Context, rec *Record, specs []thumb.Spec) ([]*Record, error) {
	body, err := s.Read(ctx, rec, 0, -1)
	if err != nil {
		return nil, err
	}
	defer func() { _ = body.Close() }()
	src := &fault.Source{R: body}
	started := time.Now()
	made, err := thumb.MakeAll(src, specs, s.thumbs.maxPixels)
	if src.Err != nil {
		return nil, s.storeError(src.Err)
	}
	var tooLarge *thumb.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return nil, apierr.New(apierr.CodeUnsupportedMedia, "no thumbnail: %s", tooLarge.Error())
	case errors.Is(err, thumb.ErrNotImage):
		return nil, apierr.Wrap(err, apierr.CodeUnsupportedMedia, "no thumbnail: the file cannot be read as an image")
	case err != nil:
		return nil, apierr.Internal(err)
	}
	thumbSeconds.Observe(time.Since(started).Seconds())
	out := make([]*Record, 0, len(made))
	for _, m := range made {
		key := thumbKey(rec, m.Spec, m.ContentType)
		// Several replicas may make the same thumbnail at the same moment (the
		// singleflight is per process). That is harmless: each makes the same
		// bytes (same source, same code, deterministic encoders) under the same
		// key, and a Put is atomic on both backends (a rename, one S3 PUT), so
		// readers see one whole object, whichever write lands last.
		n, err := s.blobs.Put(ctx, key, bytes.NewReader(m.Data))
		if err != nil {
			return nil, s.storeError(err)
		}
		thumbsMade.Inc()
		out = append(out, thumbRecord(rec, m.Spec, key, m.ContentType, n))
	}
	return out, nil
}

// thumbRecord is the file's record as a thumbnail: same id and permissions,
// the thumbnail's key, type and size. Hash is not a content hash here but
// what ThumbETag is made of.
func thumbRecord(rec *Record, spec thumb.Spec, key, contentType string, size int64) *Record {
	t := *rec
	t.Path, t.ContentType, t.Size, t.Hash = key, contentType, size, thumbHash(rec, spec)
	t.Name = strings.TrimSuffix(rec.Name, path.Ext(rec.Name)) + "-" + spec.String() + thumb.Ext(contentType)
	return &t
}

// Eager thumbnails. A photo is uploaded to be shown, most often as a tile at
// once (the listing created with it, the app's gallery): making its sizes
// on the first GET puts the full decode of a camera photo (hundreds of
// milliseconds for 12 MP; Go's decoder cannot scale while decoding) in front
// of the person waiting for the tile. With files.thumb_eager (the default),
// a stored image gets every configured size right after its upload, from one
// decode (thumb.MakeAll), in the background. It takes a thumbnail slot only
// when one is free: a busy replica leaves the sizes to the first requests,
// as before, so eager making never queues or adds up decoded images.

// startEagerThumbs makes rec's thumbnails in the background when it is an
// image, eager making is on and a slot is free.
func (s *Service) startEagerThumbs(rec *Record) {
	if !s.thumbs.eager || !isThumbSource(rec.ContentType) || len(s.thumbs.allowed) == 0 {
		return
	}
	select {
	case s.thumbs.slots <- struct{}{}:
	default:
		return // busy: each size is made by its first request
	}
	s.thumbs.mu.Lock()
	if s.thumbs.closed {
		s.thumbs.mu.Unlock()
		<-s.thumbs.slots
		return
	}
	s.thumbs.wg.Add(1)
	s.thumbs.running.Add(1)
	s.thumbs.mu.Unlock()
	src := *rec
	done := make(chan struct{})
	s.thumbs.pending.Store(src.Path, done)
	go func() {
		defer s.thumbs.wg.Done()
		defer s.thumbs.running.Add(-1)
		defer func() { <-s.thumbs.slots }()
		defer func() { s.thumbs.pending.Delete(src.Path); close(done) }()
		defer func() {
			if p := recover(); p != nil {
				s.opts.Log.WithField("file", src.ID).Errorf("making the thumbnails of an upload: panic: %v", p)
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), thumbTimeout)
		defer cancel()
		started := time.Now()
		n, err := s.makeAllThumbs(ctx, &src)
		log := s.opts.Log.WithField("file", src.ID)
		if err != nil {
			// Not an image after all, over the pixel limit, or the store
			// failing: the first request answers the error as before.
			log.WithError(err).Debug("thumbnails not made at upload")
			return
		}
		log.WithField("made", n).WithField("duration", time.Since(started).String()).Debug("thumbnails made at upload")
	}()
}

// makeAllThumbs makes and stores every configured size of rec not stored yet,
// from one decode; the caller holds a slot. It answers how many it made.
func (s *Service) makeAllThumbs(ctx context.Context, rec *Record) (int, error) {
	var missing []thumb.Spec
	for _, name := range s.thumbs.allowed {
		spec := s.thumbs.sizes[name]
		t, err := s.storedThumb(ctx, rec, spec)
		if err != nil {
			return 0, err
		}
		if t == nil {
			missing = append(missing, spec)
		}
	}
	if len(missing) == 0 {
		return 0, nil
	}
	made, err := s.makeSizes(ctx, rec, missing)
	return len(made), err
}

// WaitThumbnails waits until no thumbnail is being made at upload: tests that
// count the objects in the store call it first, so that a making still
// writing (its temporary file, its last size) is not taken for a leftover.
func (s *Service) WaitThumbnails(ctx context.Context) error {
	for s.thumbs.running.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// Close waits for the thumbnails being made at upload (at most thumbTimeout)
// and makes no more: the blob store and database they write to close next.
func (s *Service) Close() error {
	s.thumbs.mu.Lock()
	s.thumbs.closed = true
	s.thumbs.mu.Unlock()
	s.thumbs.wg.Wait()
	return nil
}
