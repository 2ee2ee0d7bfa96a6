package filestore

// Staged uploads: bytes a caller writes into the store over several requests
// (system's resumable uploads) and then makes a file of with Adopt, without
// a second pass over them. Each backend stages the way that costs no copy:
//
//   - local: one scratch file, written at offsets (AppendScratch), renamed
//     into the file's key at the end;
//   - s3: the parts of one multipart upload at the file's key (StartParts,
//     PutPart), completed at the end (CompleteParts).
//
// The caller hashes the bytes on their way in; Adopt reads the head back to
// sniff it and runs Put's checks before the file is recorded.

import (
	"context"
	"errors"
	"io"
	"path"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/fault"
	"github.com/agritrade/api/platform/logging"
	"github.com/sirupsen/logrus"
)

// appender is a Blobs that writes an object at an offset and renames one
// (Local): a staged upload is a scratch file renamed into place.
type appender interface {
	// Append writes r at offset, after cutting the object back to offset
	// (what a failed or abandoned write left past it goes); when r or the
	// store fails, the object is cut back to offset again. An object shorter
	// than offset answers ErrShort.
	Append(ctx context.Context, key string, offset int64, r io.Reader) (int64, error)
	// Rename moves an object to another key.
	Rename(ctx context.Context, src, dst string) error
}

// ErrShort is answered by Append when the object holds fewer bytes than the
// offset: the staged bytes were lost.
var ErrShort = errors.New("filestore: the staged object is shorter than the offset")

// parter is a Blobs that uploads an object in parts (S3 multipart uploads).
type parter interface {
	StartParts(ctx context.Context, key string) (string, error)
	PutPart(ctx context.Context, key, uploadID string, number int, r io.Reader, size int64) (string, error)
	CompleteParts(ctx context.Context, key, uploadID string, parts []Part) error
	// AbortParts ends an upload and drops its parts; one already gone is
	// not an error.
	AbortParts(ctx context.Context, key, uploadID string) error
}

// Part is one uploaded part of a staged object.
type Part struct {
	Number int    `json:"n"`
	ETag   string `json:"etag"`
	Size   int64  `json:"size"`
}

// ErrNoSuchUpload is answered by PutPart for an upload that was completed or
// aborted.
var ErrNoSuchUpload = errors.New("filestore: no such multipart upload")

// CanAppend tells whether the store stages by appending (local).
func (s *Service) CanAppend() bool { _, ok := s.blobs.(appender); return ok }

// CanPart tells whether the store stages in parts (S3).
func (s *Service) CanPart() bool { _, ok := s.blobs.(parter); return ok }

// ReserveKey names the file a staged upload will become: its storage key,
// whose last segment is the record's id (Adopt).
func (s *Service) ReserveKey(p *auth.Principal, bucket string) string {
	// A staged upload's id is never one a context fixes (platform/ids): no context here.
	return s.newRecord(context.Background(), p, bucket, "").Path
}

// AppendScratch writes r at offset of the scratch object key (see appender).
// An error of r is answered as it is; a store failure as 503 or 500.
func (s *Service) AppendScratch(ctx context.Context, key string, offset int64, r io.Reader) (int64, error) {
	ap, ok := s.blobs.(appender)
	if !ok {
		return 0, apierr.Internal(errors.New("filestore: the store cannot append"))
	}
	key, err := scratchKey(key)
	if err != nil {
		return 0, apierr.Internal(err)
	}
	body := &fault.Source{R: r}
	n, err := ap.Append(ctx, key, offset, body)
	if err != nil {
		if body.Err != nil {
			return n, body.Err
		}
		return n, s.storeError(err)
	}
	bytesIn.Add(float64(n))
	return n, nil
}

// StartParts begins the multipart upload of a reserved key.
func (s *Service) StartParts(ctx context.Context, key string) (string, error) {
	pt, err := s.parter(key)
	if err != nil {
		return "", err
	}
	id, err := pt.StartParts(ctx, key)
	if err != nil {
		return "", s.storeError(err)
	}
	return id, nil
}

// PutPart uploads r (size bytes) as part number of an upload. An error of r
// is answered as it is, a completed or aborted upload as ErrNoSuchUpload.
func (s *Service) PutPart(ctx context.Context, key, uploadID string, number int, r io.Reader, size int64) (Part, error) {
	pt, err := s.parter(key)
	if err != nil {
		return Part{}, err
	}
	body := &fault.Source{R: r}
	etag, err := pt.PutPart(ctx, key, uploadID, number, body, size)
	if err != nil {
		if body.Err != nil {
			return Part{}, body.Err
		}
		if errors.Is(err, ErrNoSuchUpload) {
			return Part{}, err
		}
		return Part{}, s.storeError(err)
	}
	bytesIn.Add(float64(size))
	return Part{Number: number, ETag: etag, Size: size}, nil
}

// CompleteParts makes the object of its parts.
func (s *Service) CompleteParts(ctx context.Context, key, uploadID string, parts []Part) error {
	pt, err := s.parter(key)
	if err != nil {
		return err
	}
	if err := pt.CompleteParts(ctx, key, uploadID, parts); err != nil {
		return s.storeError(err)
	}
	return nil
}

// AbortParts drops an upload and its parts.
func (s *Service) AbortParts(ctx context.Context, key, uploadID string) error {
	pt, err := s.parter(key)
	if err != nil {
		return err
	}
	if err := pt.AbortParts(ctx, key, uploadID); err != nil {
		return s.storeError(err)
	}
	return nil
}

func (s *Service) parter(key string) (parter, error) {
	pt, ok := s.blobs.(parter)
	if !ok {
		return nil, apierr.Internal(errors.New("filestore: the store cannot upload in parts"))
	}
	if err := checkKey(key); err != nil {
		return nil, apierr.Internal(err)
	}
	return pt, nil
}

// StagedSize answers the size of a staged object; ErrNotExist when there is
// none.
func (s *Service) StagedSize(ctx context.Context, key string) (int64, error) {
	n, err := s.blobs.Stat(ctx, key)
	if err != nil && !errors.Is(err, ErrNotExist) {
		return 0, s.storeError(err)
	}
	return n, err
}

// Staged is an upload's bytes, whole, in the store.
type Staged struct {
	// From is the scratch object holding them, moved to Key by Adopt; empty
	// when they are at Key already (a completed multipart upload).
	From string
	// Key is the key ReserveKey gave.
	Key string
	// Size and Hash (hex SHA-256) are what the caller counted and hashed on
	// the way in.
	Size int64
	Hash string
}

// Adopt records staged bytes as a file, as Put records an upload: the same
// checks (the fields 400/403, the limit 413, the type the bucket takes 415,
// sniffed from the head read back), then the bytes moved into their key
// when they are not there yet (a rename), then the record. A refusal leaves
// the bytes where they were (the caller removes them, DropStaged). Adopt is
// idempotent: the file of a key already recorded is answered again, so a
// caller that lost the answer may ask once more.
func (s *Service) Adopt(ctx context.Context, p *auth.Principal, in PutInput, st Staged) (*Record, error) {
	if p == nil {
		return nil, apierr.Unauthorized("uploading needs a bearer token")
	}
	id := path.Base(st.Key)
	if err := checkKey(st.Key); err != nil || strings.HasPrefix(st.Key, ScratchPrefix) {
		return nil, apierr.Internal(errors.New("filestore: adopt into a key ReserveKey did not give: " + st.Key))
	}
	if rec, err := s.store.get(ctx, id); err != nil {
		return nil, err
	} else if rec != nil && rec.Path == st.Key {
		s.sign(rec)
		return rec, nil
	}
	src := st.Key
	if st.From != "" {
		if _, err := scratchKey(st.From); err != nil {
			return nil, apierr.Internal(err)
		}
		src = st.From
	}
	head, err := s.readHead(ctx, src)
	if err != nil {
		return nil, err
	}
	u, contentType, err := s.checkWhole(p, in, st.Size, head)
	if err != nil {
		return nil, err
	}
	undo := func() {}
	if st.From != "" {
		ap, ok := s.blobs.(appender)
		if !ok {
			return nil, apierr.Internal(errors.New("filestore: the store cannot rename"))
		}
		if err := ap.Rename(ctx, st.From, st.Key); err != nil {
			return nil, s.storeError(err)
		}
		undo = func() {
			if err := ap.Rename(context.WithoutCancel(ctx), st.Key, st.From); err != nil {
				s.opts.Log.WithError(err).WithField("key", st.Key).Error("could not move the bytes of an unrecorded upload back")
			}
		}
	}
	rec := s.newRecord(ctx, p, u.bucket, contentType)
	rec.ID, rec.Path = id, st.Key
	rec.Bucket, rec.Type, rec.Name, rec.OrganisationID, rec.Organisations = u.bucket, u.typ, u.name, u.org, u.orgs
	rec.Size, rec.Hash = st.Size, st.Hash
	if err := s.store.insert(ctx, rec); err != nil {
		undo()
		return nil, err
	}
	s.sign(rec)
	logging.Ctx(ctx, s.opts.Log).WithFields(logrus.Fields{"file": rec.ID, "bucket": rec.Bucket, "type": rec.Type, "contentType": rec.ContentType, "bytes": rec.Size, "key": rec.Path}).Debug("staged file stored")
	s.startEagerThumbs(rec)
	return rec, nil
}

// readHead reads the first HeadLen bytes of an object (a ranged GET on S3).
func (s *Service) readHead(ctx context.Context, key string) ([]byte, error) {
	rc, err := s.blobs.Open(ctx, key, 0, HeadLen)
	if err != nil {
		return nil, s.storeError(err)
	}
	defer func() { _ = rc.Close() }()
	head, err := io.ReadAll(io.LimitReader(rc, HeadLen))
	if err != nil {
		return nil, s.storeError(err)
	}
	return head, nil
}

// DropStaged removes the bytes staged at a reserved key, unless they have
// become a file (a record has the key): what a refused, terminated or
// expired upload leaves. A missing object is not an error.
func (s *Service) DropStaged(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return apierr.Internal(err)
	}
	rec, err := s.store.get(ctx, path.Base(key))
	if err != nil {
		return err
	}
	if rec != nil && rec.Path == key {
		return nil
	}
	if err := s.blobs.Delete(ctx, key); err != nil {
		return s.storeError(err)
	}
	return nil
}
