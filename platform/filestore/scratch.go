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
// a file by reading them back as its body, Adopt by renaming one (staged.go).
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
	_, err := validateInput(p, in, s.types)
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

// checkWhole runs Put's checks on an upload whose bytes are all in the
// store already (Adopt): the fields (400, 403), the limit (413), emptiness,
// and the type the bucket takes (415), sniffed from head (its first HeadLen
// bytes).
func (s *Service) checkWhole(p *auth.Principal, in PutInput, size int64, head []byte) (upload, string, error) {
	in.Body, in.Rest = eofReader{}, nil
	u, err := validateInput(p, in, s.types)
	if err != nil {
		return u, "", err
	}
	if s.opts.MaxBytes > 0 && size > s.opts.MaxBytes {
		return u, "", s.bodyError(ErrTooLarge)
	}
	if size == 0 || len(head) == 0 {
		return u, "", errEmptyFile()
	}
	contentType, executable := Sniff(head)
	if err := refused(u.bucket, contentType, executable); err != nil {
		return u, "", err
	}
	return u, contentType, nil
}
