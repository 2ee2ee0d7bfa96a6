package filestore

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/fault"
)

// ScratchPrefix is where bytes that are not a file yet live: the chunks of
// resumable uploads (system's /uploads), which outlive a request and a
// replica, so they go to the same store as files, local or S3. Their owner
// keeps track of them (a database row) and removes them; Put turns them into
// a file by reading them back as its body.
const ScratchPrefix = "resumable/"

// Check runs the checks of Put that need no bytes: the fields (400 listing
// every failing one) and the organisations (403). A resumable upload runs
// them at creation, so that a bad bucket fails before any byte is sent; Put
// runs them again when the last byte has arrived.
func (s *Service) Check(p *auth.Principal, in PutInput) error {
	if p == nil {
		return apierr.Unauthorized("uploading needs a bearer token")
	}
	in.Body = eofReader{} // the bytes come later
	in.Rest = nil
	_, err := validateInput(p, in)
	return err
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

func scratchKey(key string) (string, error) {
	if !strings.HasPrefix(key, ScratchPrefix) {
		return "", errors.New("filestore: scratch key outside " + ScratchPrefix)
	}
	return key, checkKey(key)
}

// PutScratch stores r under key (which starts with ScratchPrefix) as Blobs.Put
// does: all of r or nothing. An error of r is answered as it is (the caller's
// reader knows why it stopped); a store failure as 503 or 500.
func (s *Service) PutScratch(ctx context.Context, key string, r io.Reader) (int64, error) {
	key, err := scratchKey(key)
	if err != nil {
		return 0, apierr.Internal(err)
	}
	body := &fault.Source{R: r}
	n, err := s.blobs.Put(ctx, key, body)
	if err != nil {
		if body.Err != nil {
			return n, body.Err
		}
		return n, s.storeError(err)
	}
	return n, nil
}

// OpenScratch reads a scratch object from its start.
func (s *Service) OpenScratch(ctx context.Context, key string) (io.ReadCloser, error) {
	key, err := scratchKey(key)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	rc, err := s.blobs.Open(ctx, key, 0, -1)
	if err != nil {
		return nil, s.storeError(err)
	}
	return rc, nil
}

// DeleteScratch removes a scratch object; a missing one is not an error.
func (s *Service) DeleteScratch(ctx context.Context, key string) error {
	key, err := scratchKey(key)
	if err != nil {
		return apierr.Internal(err)
	}
	if err := s.blobs.Delete(ctx, key); err != nil {
		return s.storeError(err)
	}
	return nil
}

// MinJoinPart is the smallest scratch object JoinScratch takes, except the
// last: S3 joins objects as the parts of a multipart upload, 5 MiB at least.
const MinJoinPart = 5 << 20

// joiner is a Blobs that can make one object of others inside the store,
// the bytes never leaving it (S3: UploadPartCopy). Local has no such thing
// that would save a copy, so it is not one.
type joiner interface {
	Join(ctx context.Context, dst string, srcs []string) error
}

// CanJoin tells whether JoinScratch can take scratch objects of these sizes,
// in this order.
func (s *Service) CanJoin(sizes []int64) bool {
	if _, ok := s.blobs.(joiner); !ok || len(sizes) == 0 || len(sizes) > 10000 {
		return false
	}
	for _, n := range sizes[:len(sizes)-1] {
		if n < MinJoinPart {
			return false
		}
	}
	return true
}

// JoinScratch records, as Put would, a file whose bytes are scratch objects
// joined inside the store: the caller hashed them on their way in (hash is
// the hex SHA-256 of them all, size their length) and gives their first
// HeadLen bytes (head) to sniff. Put's checks hold: the fields (400, 403),
// the limit (413), the type the bucket takes (415), all before anything is
// written. The scratch objects stay; the caller removes them.
func (s *Service) JoinScratch(ctx context.Context, p *auth.Principal, in PutInput, srcs []string, size int64, hash string, head []byte) (*Record, error) {
	j, ok := s.blobs.(joiner)
	if !ok {
		return nil, apierr.Internal(errors.New("filestore: the store cannot join objects"))
	}
	if p == nil {
		return nil, apierr.Unauthorized("uploading needs a bearer token")
	}
	in.Body, in.Rest = eofReader{}, nil
	u, err := validateInput(p, in)
	if err != nil {
		return nil, err
	}
	if s.opts.MaxBytes > 0 && size > s.opts.MaxBytes {
		return nil, s.bodyError(ErrTooLarge)
	}
	if size == 0 {
		return nil, apierr.Invalid(apierr.FieldError{Path: "file", Code: "required", Message: "must not be empty", Data: map[string]any{}})
	}
	contentType, executable := Sniff(head)
	if !Accepts(u.bucket, contentType, executable) {
		return nil, apierr.New(apierr.CodeUnsupportedMedia, "the %s bucket does not accept %s content", u.bucket, contentType)
	}
	rec := s.newRecord(ctx, p, u.bucket, contentType)
	for _, k := range srcs {
		if _, err := scratchKey(k); err != nil {
			return nil, apierr.Internal(err)
		}
	}
	if err := j.Join(ctx, rec.Path, srcs); err != nil {
		return nil, s.storeError(err)
	}
	rec.Bucket, rec.Type, rec.Name, rec.OrganisationID, rec.Organisations = u.bucket, u.typ, u.name, u.org, u.orgs
	rec.Size, rec.Hash = size, hash
	bytesIn.Add(float64(size))
	if err := s.store.insert(ctx, rec); err != nil {
		if derr := s.blobs.Delete(context.WithoutCancel(ctx), rec.Path); derr != nil {
			s.opts.Log.WithError(derr).WithField("key", rec.Path).Error("could not remove the bytes of an unrecorded upload")
		}
		return nil, err
	}
	s.sign(rec)
	return rec, nil
}
