package tabular

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"strings"

	"github.com/agritrade/api/platform/apierr"
)

// maxFieldBytes caps a plain form field.
const maxFieldBytes = 64 << 10

// upload is a Reader over a multipart file part; closing it closes the body.
type upload struct {
	Reader
	body    io.Closer
	release func()
}

func (u *upload) Close() error {
	defer u.release()
	err := u.Reader.Close()
	if cerr := u.body.Close(); err == nil {
		err = cerr
	}
	return err
}

// FromRequest reads a multipart/form-data import: the file part named field
// and the plain form fields, in any order (API.md, Conventions). The file part
// is spooled to a temporary file as it arrives (disk, bounded by o.MaxBytes;
// memory stays small) so that fields sent after it are read too, then opened
// as a Reader; closing the Reader removes the spool. The body's own limit
// (http.MaxBytesReader) still applies and answers 413. With o.Gate set, the
// import holds a slot of it from before the body is read until the Reader is
// closed (429 when full).
func FromRequest(req *http.Request, field string, o Options) (_ Reader, _ map[string]string, err error) {
	mt, params, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, nil, apierr.BadRequest("the request must be multipart/form-data with a %q file part", field)
	}
	o = o.withDefaults()
	release, err := o.Gate.Enter()
	if err != nil {
		return nil, nil, err
	}
	var spool *os.File
	defer func() {
		if err != nil {
			if spool != nil {
				removeSpool(spool)
			}
			release()
		}
	}()
	mr := multipart.NewReader(req.Body, params["boundary"])
	fields := map[string]string{}
	var filename string
	for {
		part, perr := mr.NextPart()
		if errors.Is(perr, io.EOF) {
			break
		}
		if perr != nil {
			return nil, fields, multipartError(perr)
		}
		name := part.FormName()
		switch {
		case name == field && spool != nil:
			var f apierr.Fields
			f.Add(field, "duplicate", "is given more than once: an import carries one file", nil)
			return nil, fields, f.Err()
		case name == field:
			filename = part.FileName()
			if spool, err = spoolPart(part, o); err != nil {
				return nil, fields, err
			}
		case part.FileName() == "" && name != "":
			b, rerr := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
			if rerr != nil {
				return nil, fields, multipartError(rerr)
			}
			if len(b) > maxFieldBytes {
				return nil, fields, apierr.New(apierr.CodePayloadTooLarge, "the form field %s is larger than %d bytes", name, maxFieldBytes)
			}
			fields[name] = strings.TrimSpace(string(b))
		}
		_ = part.Close()
	}
	if spool == nil {
		var f apierr.Fields
		f.Add(field, "required", "is required: attach the file as the "+field+" part", nil)
		return nil, fields, f.Err()
	}
	o.spool = spool
	r, err := OpenWith(spool, filename, o)
	if err != nil {
		return nil, fields, err
	}
	return &upload{Reader: r, body: spoolCloser{spool}, release: release}, fields, nil
}

// spoolPart copies the file part to a temporary file within o.MaxBytes and
// rewinds it.
func spoolPart(part io.Reader, o Options) (*os.File, error) {
	tmp, err := os.CreateTemp(o.TempDir, "agritrade-import-*.part")
	if err != nil {
		return nil, apierr.Internal(fmt.Errorf("spool the import: %w", err))
	}
	if _, err := io.Copy(tmp, &limitedReader{r: part, left: o.MaxBytes, limit: o.MaxBytes}); err != nil {
		removeSpool(tmp)
		return nil, multipartError(err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		removeSpool(tmp)
		return nil, apierr.Internal(fmt.Errorf("rewind the import spool: %w", err))
	}
	return tmp, nil
}

func removeSpool(f *os.File) {
	_ = f.Close()
	_ = os.Remove(f.Name()) //nolint:gosec // the name os.CreateTemp chose, not client input
}

// spoolCloser removes the spool when the import's Reader is closed.
type spoolCloser struct{ f *os.File }

func (s spoolCloser) Close() error {
	err := s.f.Close()
	if rerr := os.Remove(s.f.Name()); err == nil {
		err = rerr
	}
	return err
}

func multipartError(err error) error {
	if isMaxBytes(err) || errors.Is(err, errTooLarge) {
		return apierr.New(apierr.CodePayloadTooLarge, "the upload is larger than the limit of %d bytes", uploadLimit(err))
	}
	return apierr.Wrap(err, apierr.CodeBadRequest, "the multipart body is malformed")
}
