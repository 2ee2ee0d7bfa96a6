package files

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/httpx"
)

// Limits of the multipart form around the file.
const (
	// maxFieldBytes caps one text field; organisations is the longest one
	// (50 ids of at most 100 characters and their commas).
	maxFieldBytes = 8 << 10
	// maxParts caps the parts before the file, so that a stream of tiny
	// unknown parts cannot keep the handler busy.
	maxParts = 32
	// FormOverhead is what the body may carry beyond the file: boundaries,
	// part headers and the text fields.
	FormOverhead = 1 << 20
)

// form is the upload's text fields, read before the file part.
type form struct {
	in   filestore.PutInput
	seen map[string]bool
}

// set stores a known field; false for a field the upload does not have.
func (f *form) set(name, value string) bool {
	switch name {
	case "bucket":
		f.in.Bucket = value
	case "type":
		f.in.Type = value
	case "name":
		f.in.Name = value
	case "organisationId":
		f.in.OrganisationID = value
	case "organisations":
		// Comma-separated, and the field may also be repeated.
		f.in.Organisations = append(f.in.Organisations, strings.Split(value, ",")...)
	default:
		return false
	}
	return true
}

// multipartReader checks the content type and returns the streaming reader of
// the body (never ParseMultipartForm, which would spool the file).
func multipartReader(r *http.Request) (*multipart.Reader, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, apierr.BadRequest("the upload must be multipart/form-data with a boundary")
	}
	return multipart.NewReader(r.Body, params["boundary"]), nil
}

// readForm reads the text fields up to the file part, which it returns
// unread with the fields; the caller streams it. The fields may come in any
// order, but all of them before the file part: that is what lets the content
// go straight to the store. A missing file part answers an input with a nil
// Body (the service then lists it with the other missing fields).
func readForm(mr *multipart.Reader) (filestore.PutInput, *multipart.Part, error) {
	f := form{seen: map[string]bool{}}
	var fields apierr.Fields
	for i := 0; ; i++ {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return f.in, nil, fields.Err()
		}
		if err != nil {
			return f.in, nil, partError(err)
		}
		name := part.FormName()
		if name == "file" {
			if err := fields.Err(); err != nil {
				return f.in, nil, err
			}
			return f.in, part, nil
		}
		if i >= maxParts {
			return f.in, nil, apierr.BadRequest("the upload has more than %d parts before the file", maxParts)
		}
		value, err := readField(part)
		if err != nil {
			if errors.Is(err, errFieldTooLong) {
				fields.Add(name, "max_length", "is longer than the form field limit", map[string]any{"max": maxFieldBytes})
				continue
			}
			return f.in, nil, partError(err)
		}
		if !httpx.CheckText(&fields, httpx.Printable(name), name) || !httpx.CheckText(&fields, name, value) {
			continue
		}
		if f.seen[name] && name != "organisations" {
			fields.Add(name, "duplicate", "is given more than once", nil)
			continue
		}
		if f.set(name, value) {
			f.seen[name] = true
		}
	}
}

var errFieldTooLong = errors.New("form field too long")

// readField reads one text field within maxFieldBytes; longer ones are
// drained (they may be unknown parts) and reported.
func readField(part *multipart.Part) (string, error) {
	b, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxFieldBytes {
		if _, err := io.Copy(io.Discard, part); err != nil {
			return "", err
		}
		return "", errFieldTooLong
	}
	return string(b), nil
}

// partError answers a body that breaks the multipart syntax or the size limit.
func partError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return apierr.New(apierr.CodePayloadTooLarge, "the upload is larger than the limit")
	}
	return apierr.Wrap(err, apierr.CodeBadRequest, "the multipart body is not well-formed")
}

// fileBody is the file part as the service reads it. At the end of the part
// it checks that the form ends there too: a field after the file would come
// too late to decide where the bytes go, so it fails the upload (the store
// then keeps nothing) instead of being ignored.
type fileBody struct {
	part *multipart.Part
	mr   *multipart.Reader
}

func (b *fileBody) Read(p []byte) (int, error) {
	n, err := b.part.Read(p)
	if !errors.Is(err, io.EOF) {
		if err != nil {
			return n, partError(err)
		}
		return n, nil
	}
	next, nerr := b.mr.NextPart()
	switch {
	case errors.Is(nerr, io.EOF):
		return n, io.EOF
	case nerr != nil:
		return n, partError(nerr)
	default:
		return n, apierr.Invalid(apierr.FieldError{Path: next.FormName(), Code: "order",
			Message: "must come before the file part", Data: map[string]any{}})
	}
}
