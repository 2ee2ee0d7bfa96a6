// Package filestore stores uploaded files and the records every module
// references them by.
//
// The bytes go to a blob store behind the Blobs interface (a local directory by
// default, or any S3-compatible store); the record (who uploaded it, which
// organisations may read it, its SHA-256, its sniffed content type, its status)
// goes to the platform_files table. Uploads are streamed: the body is hashed,
// counted and sniffed on its way to the store and never held whole in memory,
// and a refused or aborted upload leaves neither bytes nor a record.
//
// Modules that carry file references in their own requests (loads, listings,
// expert questions, messages) call Service.Resolve to check them and store the
// canonical Ref values it answers.
package filestore

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
)

// The buckets of the seed: each accepts a family of content types.
const (
	BucketImages = "images"
	BucketFiles  = "files"
	BucketVideos = "videos"
)

// Buckets lists the accepted bucket names.
var Buckets = []string{BucketImages, BucketFiles, BucketVideos}

// The statuses of a file: DELETE archives (API.md), nothing is ever erased.
const (
	StatusActive   = "active"
	StatusArchived = "archived"
)

// Limits of the upload fields. Names are shown in file pickers and headers;
// 255 characters is what common file systems allow.
const (
	MaxNameLen         = 255
	MaxOrganisations   = 50
	MaxOrganisationLen = 100
	MaxResolveRefs     = 100
	timeLayout         = time.RFC3339
)

// Ref is the seed's file reference (inside `files` arrays of requests and responses).
type Ref struct {
	Name           string `json:"name"`
	ID             string `json:"id"`
	URL            string `json:"url"`
	UserID         string `json:"userId"`
	UserName       string `json:"userName"`
	OrganisationID string `json:"organisationId"`
	CreatedAtUTC   string `json:"createdAtUTC"`
}

// PutInput is one upload: the seed's multipart fields and the content.
type PutInput struct {
	Bucket, Type, Name, OrganisationID string
	// Organisations are further organisations whose members may read the file.
	Organisations []string
	// Body is read to its end; its error (if any) aborts the upload.
	Body io.Reader
	// Rest, when set, completes the input once Body has been read: form
	// fields may follow the file part (multipart in any order), so the fields
	// above are then only what came first. Values given early are checked
	// before any byte is stored; what is missing is required only of the
	// input Rest answers, and a failure then removes the stored bytes.
	Rest func() (PutInput, error)
}

// Record is a stored file. URL is the plain download URL; SignedURL and
// SignedStreamURL carry an expiring token and are set by the Service whenever
// it hands a record out.
type Record struct {
	ID             string
	Bucket         string
	Type           string
	Name           string
	Path           string // storage key in the blob store
	Hash           string // hex SHA-256 of the content
	ContentType    string
	Size           int64
	UserID         string
	UserName       string
	OrganisationID string
	Organisations  []string
	Tags           []string
	Status         string
	CreatedAt      time.Time

	URL             string
	SignedURL       string
	SignedStreamURL string
}

// Info is the seed's file info: the answer of the information operation and
// the `info` of a file record.
type Info struct {
	Bucket         string   `json:"bucket"`
	Type           string   `json:"type"`
	OrganisationID string   `json:"organisationId"`
	Name           string   `json:"name"`
	Path           string   `json:"path"`
	Hash           string   `json:"hash"`
	ContentType    string   `json:"contentType"`
	Size           int64    `json:"size"`
	URL            string   `json:"url"`
	URLStream      string   `json:"urlStream"`
	UserID         string   `json:"userId"`
	UserName       string   `json:"userName"`
	Organisations  []string `json:"organisations"`
	CreatedAtUTC   string   `json:"createdAtUTC"`
}

// recordJSON is the seed's file record shape.
type recordJSON struct {
	ID             string   `json:"id"`
	Tags           []string `json:"tags"`
	Info           Info     `json:"info"`
	OrganisationID string   `json:"organisationId"`
	UserID         string   `json:"userId"`
	Type           string   `json:"type"`
	Status         string   `json:"status"`
}

// Ref returns the canonical reference other modules store.
func (r *Record) Ref() Ref {
	return Ref{
		Name:           r.Name,
		ID:             r.ID,
		URL:            r.URL,
		UserID:         r.UserID,
		UserName:       r.UserName,
		OrganisationID: r.OrganisationID,
		CreatedAtUTC:   r.CreatedAt.UTC().Format(timeLayout),
	}
}

// Info returns the file info with the signed URLs (image tags and players use
// them without an Authorization header).
func (r *Record) Info() Info {
	return Info{
		Bucket:         r.Bucket,
		Type:           r.Type,
		OrganisationID: r.OrganisationID,
		Name:           r.Name,
		Path:           r.Path,
		Hash:           r.Hash,
		ContentType:    r.ContentType,
		Size:           r.Size,
		URL:            r.SignedURL,
		URLStream:      r.SignedStreamURL,
		UserID:         r.UserID,
		UserName:       r.UserName,
		Organisations:  nonNil(r.Organisations),
		CreatedAtUTC:   r.CreatedAt.UTC().Format(timeLayout),
	}
}

// ETag is the strong entity tag of the content: its quoted SHA-256.
func (r *Record) ETag() string { return `"` + r.Hash + `"` }

// MarshalJSON renders the seed's file record.
func (r *Record) MarshalJSON() ([]byte, error) {
	return json.Marshal(recordJSON{
		ID:             r.ID,
		Tags:           nonNil(r.Tags),
		Info:           r.Info(),
		OrganisationID: r.OrganisationID,
		UserID:         r.UserID,
		Type:           r.Type,
		Status:         r.Status,
	})
}

// ReadableBy tells whether p may read the file: its uploader and the members
// of its organisation and of the organisations it is shared with (API.md).
func (r *Record) ReadableBy(p *auth.Principal) bool {
	if p == nil {
		return false
	}
	if p.UserID != "" && p.UserID == r.UserID {
		return true
	}
	if p.MemberOf(r.OrganisationID) {
		return true
	}
	return slices.ContainsFunc(r.Organisations, p.MemberOf)
}

// ArchivableBy tells whether p may archive the file: its uploader or an admin.
func (r *Record) ArchivableBy(p *auth.Principal) bool {
	if p == nil {
		return false
	}
	return (p.UserID != "" && p.UserID == r.UserID) || p.IsAdmin()
}

// upload is a validated PutInput.
type upload struct {
	bucket, typ, name, org string
	orgs                   []string
}

// validateInput checks the fields of an upload, listing every failing one;
// the type is one of types, or any non-empty one when types is nil (see
// Service.AcceptTypes). An organisation the caller does not belong to is 403,
// not a field error: the caller is authenticated but may not act for it.
func validateInput(p *auth.Principal, in PutInput, types []string) (upload, error) {
	var f apierr.Fields
	u := upload{bucket: strings.TrimSpace(in.Bucket), typ: strings.TrimSpace(in.Type), name: strings.TrimSpace(in.Name)}
	if f.Required("bucket", u.bucket) {
		f.OneOf("bucket", u.bucket, Buckets...)
	}
	if f.Required("type", u.typ) && types != nil {
		f.OneOf("type", u.typ, types...)
	}
	if f.Required("name", u.name) && f.MaxLen("name", u.name, MaxNameLen) {
		f.Check(validName(u.name), "name", "format", "must be valid UTF-8 without control characters")
	}
	if in.Body == nil {
		f.Add("file", "required", "is required", nil)
	}
	u.org = strings.TrimSpace(in.OrganisationID)
	if u.org == "" {
		u.org = p.OrgID
	}
	if f.Required("organisationId", u.org) {
		f.MaxLen("organisationId", u.org, MaxOrganisationLen)
	}
	// Blank entries and repeats (of the owner too) carry no meaning in a
	// comma-separated list: they are dropped, not refused.
	seen := map[string]bool{u.org: true}
	for _, o := range in.Organisations {
		o = strings.TrimSpace(o)
		if o == "" || seen[o] {
			continue
		}
		seen[o] = true
		if !f.MaxLen("organisations", o, MaxOrganisationLen) ||
			!f.Check(validName(o), "organisations", "format", "must be comma-separated organisation ids") {
			break
		}
		if len(u.orgs) == MaxOrganisations {
			f.Add("organisations", "max_items", fmt.Sprintf("must name at most %d organisations", MaxOrganisations), map[string]any{"max": MaxOrganisations})
			break
		}
		u.orgs = append(u.orgs, o)
	}
	if err := f.Err(); err != nil {
		return u, err
	}
	if !p.MemberOf(u.org) {
		return u, apierr.Forbidden("you are not a member of organisation %s", u.org)
	}
	return u, nil
}

// validName accepts valid UTF-8 without control characters (they would break
// headers and logs).
func validName(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return false
		}
	}
	return true
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
