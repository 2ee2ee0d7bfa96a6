package tabular

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"

	"github.com/agritrade/api/platform/apierr"
)

// maxFieldBytes caps a plain form field read before the file part.
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

// FromRequest streams the file part named field of a multipart/form-data
// request into a Reader, without buffering the body. Plain form fields that
// come before the file part are returned (clients send fields first; fields
// after the file are not read). The body's own limit (http.MaxBytesReader)
// still applies and answers 413. With o.Gate set, the import holds a slot of
// it from before the body is read until the Reader is closed (429 when full).
func FromRequest(req *http.Request, field string, o Options) (_ Reader, _ map[string]string, err error) {
	mt, params, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, nil, apierr.BadRequest("the request must be multipart/form-data with a %q file part", field)
	}
	release, err := o.Gate.Enter()
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	mr := multipart.NewReader(req.Body, params["boundary"])
	fields := map[string]string{}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			var f apierr.Fields
			f.Add(field, "required", "is required: attach the file as the "+field+" part", nil)
			return nil, fields, f.Err()
		}
		if err != nil {
			return nil, fields, multipartError(err)
		}
		name := part.FormName()
		if name == field {
			r, err := OpenWith(part, part.FileName(), o)
			if err != nil {
				return nil, fields, err
			}
			return &upload{Reader: r, body: part, release: release}, fields, nil
		}
		if part.FileName() == "" && name != "" {
			b, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
			if err != nil {
				return nil, fields, multipartError(err)
			}
			if len(b) > maxFieldBytes {
				return nil, fields, apierr.New(apierr.CodePayloadTooLarge, "the form field %s is larger than %d bytes", name, maxFieldBytes)
			}
			fields[name] = strings.TrimSpace(string(b))
		}
		_ = part.Close()
	}
}

func multipartError(err error) error {
	if isMaxBytes(err) || errors.Is(err, errTooLarge) {
		return apierr.New(apierr.CodePayloadTooLarge, "the upload is larger than the limit of %d bytes", uploadLimit(err))
	}
	return apierr.Wrap(err, apierr.CodeBadRequest, "the multipart body is malformed")
}
