package filestore

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
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
	body := &errReader{r: r}
	n, err := s.blobs.Put(ctx, key, body)
	if err != nil {
		if body.err != nil {
			return n, body.err
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

// errReader keeps the reader's own failure apart from the store's.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		e.err = err
	}
	return n, err
}
