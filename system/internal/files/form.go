package files

import (
	"bufio"
	"encoding/base64"
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
	// maxParts caps the text parts, so that a stream of tiny unknown parts
	// cannot keep the handler busy.
	maxParts = 32
	// FormOverhead is what the body may carry beyond the file: boundaries,
	// part headers and the text fields.
	FormOverhead = 1 << 20
	// maxMetadataBytes caps a resumable upload's Upload-Metadata: the
	// longest organisations field, base64-encoded, and the short fields.
	maxMetadataBytes = 16 << 10
)

// form is the upload's text fields, before and after the file part.
type form struct {
	in     filestore.PutInput
	seen   map[string]bool
	fields apierr.Fields
	parts  int
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

// bodyBuffer is the read buffer under the multipart reader. Its own buffer
// is 4 KiB and it fills it from the body directly: one system call per 4 KiB
// of a 50 MiB upload. Reading the body through this buffer makes each call
// take what the socket holds, up to 256 KiB.
const bodyBuffer = 256 << 10

// multipartReader checks the content type and returns the streaming reader of
// the body (never ParseMultipartForm, which would spool the file).
func multipartReader(r *http.Request) (*multipart.Reader, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, apierr.BadRequest("the upload must be multipart/form-data with a boundary")
	}
	return multipart.NewReader(bufio.NewReaderSize(r.Body, bodyBuffer), params["boundary"]), nil
}

// readForm reads the form up to the file part and returns the part unread;
// the caller streams it through a fileBody, which reads the rest of the form
// when the part ends. Text fields and the file part come in any order
// (API.md, Conventions): fields before the file are checked before any byte
// is stored, so a bad bucket or name fails fast; fields after it complete the
// input once the bytes are in (form.rest). A form without a file part
// answers a nil part (the service then lists file with the other missing
// fields).
func readForm(mr *multipart.Reader) (*form, *multipart.Part, error) {
	f := &form{seen: map[string]bool{}}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return f, nil, f.fields.Err()
		}
		if err != nil {
			return f, nil, partError(err)
		}
		if part.FormName() == "file" {
			if err := f.fields.Err(); err != nil {
				return f, nil, err
			}
			return f, part, nil
		}
		if err := f.read(part); err != nil {
			return f, nil, err
		}
	}
}

// read takes one text part into the form. Field-level problems (too long,
// repeated) are recorded in f.fields; the error is for a form that cannot be
// read on (syntax, size, too many parts).
func (f *form) read(part *multipart.Part) error {
	f.parts++
	if f.parts > maxParts {
		return apierr.BadRequest("the upload has more than %d text parts", maxParts)
	}
	name := part.FormName()
	value, err := readField(part)
	if err != nil {
		if errors.Is(err, errFieldTooLong) {
			f.fields.Add(name, "max_length", "is longer than the form field limit", map[string]any{"max": maxFieldBytes})
			return nil
		}
		return partError(err)
	}
	f.field(name, value)
	return nil
}

// field checks one text field and takes it into the form; problems go to
// f.fields. The multipart form and a resumable upload's Upload-Metadata
// (metadataInput) both come through here.
func (f *form) field(name, value string) {
	if !httpx.CheckText(&f.fields, httpx.Printable(name), name) || !httpx.CheckText(&f.fields, name, value) {
		return
	}
	if f.seen[name] && name != "organisations" {
		f.fields.Add(name, "duplicate", "is given more than once", nil)
		return
	}
	if f.set(name, value) {
		f.seen[name] = true
	}
}

// metadataInput reads a tus Upload-Metadata header ("key base64,key base64",
// keys without a value allowed) as the text fields of the upload form: the
// same names, limits and checks (form.field). Unknown keys are ignored, as
// unknown form parts are.
func metadataInput(header string) (filestore.PutInput, error) {
	f := &form{seen: map[string]bool{}}
	if strings.TrimSpace(header) == "" {
		return f.in, nil
	}
	// The header is kept with the upload and answered by HEAD: no more than
	// the form's fields can fill.
	if len(header) > maxMetadataBytes {
		return f.in, apierr.BadRequest("Upload-Metadata is longer than %d bytes", maxMetadataBytes)
	}
	for _, pair := range strings.Split(header, ",") {
		key, val, _ := strings.Cut(strings.TrimSpace(pair), " ")
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(val))
		if key == "" || err != nil {
			return f.in, apierr.BadRequest("Upload-Metadata must be comma-separated pairs of a key and a base64 value")
		}
		f.parts++
		if f.parts > maxParts {
			return f.in, apierr.BadRequest("Upload-Metadata has more than %d keys", maxParts)
		}
		if len(raw) > maxFieldBytes {
			f.fields.Add(key, "max_length", "is longer than the form field limit", map[string]any{"max": maxFieldBytes})
			continue
		}
		f.field(key, string(raw))
	}
	return f.in, f.fields.Err()
}

// rest is PutInput.Rest: the input with the fields that came after the file.
func (f *form) rest() (filestore.PutInput, error) {
	return f.in, f.fields.Err()
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
// it reads the rest of the form into the same form, so that fields sent after
// the file count as much as those before it; a second file part is refused.
type fileBody struct {
	part *multipart.Part
	mr   *multipart.Reader
	form *form
}

func (b *fileBody) Read(p []byte) (int, error) {
	n, err := b.part.Read(p)
	if !errors.Is(err, io.EOF) {
		if err != nil {
			return n, partError(err)
		}
		return n, nil
	}
	for {
		next, nerr := b.mr.NextPart()
		switch {
		case errors.Is(nerr, io.EOF):
			return n, io.EOF
		case nerr != nil:
			return n, partError(nerr)
		case next.FormName() == "file":
			return n, apierr.Invalid(apierr.FieldError{Path: "file", Code: "duplicate",
				Message: "is given more than once: an upload carries one file", Data: map[string]any{}})
		}
		if rerr := b.form.read(next); rerr != nil {
			return n, rerr
		}
	}
}
