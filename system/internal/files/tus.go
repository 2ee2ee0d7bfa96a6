package files

// The tus 1.0.0 protocol at /system/v1/uploads (creation,
// creation-with-upload, termination, expiration, checksum sha256).
//
// Written here rather than with github.com/tus/tusd/v2's handler, which was
// weighed first: tusd does not implement the checksum extension (tus/tusd#81:
// it would need each chunk held before it reaches the store, which is what
// this handler does), writes its errors as plain text rather than the
// project's JSON error body, answers its own 404 for uploads that exist but
// belong to another user only through a wrapping middleware, and has no place
// for the Upload-File-Id header on later HEADs nor for validating the
// metadata with the upload form's rules (400 with validation[]). Its DataStore
// (append to one object) also fits S3 only through its own s3store, not our
// filestore.Blobs. (v2.9.1 resolves from the module proxy; its go.mod requires
// 111 modules, the AWS, Azure and GCS SDKs and gRPC among its 30 direct ones.)
// The protocol part left is small: header parsing and the statuses below; the
// state is in resumable.go.

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
)

const (
	tusVersion    = "1.0.0"
	tusExtensions = "creation,creation-with-upload,termination,expiration,checksum"
	// offsetOctetStream is the content type of every chunk.
	offsetOctetStream = "application/offset+octet-stream"
	// UploadsPath is where the routes are (Location headers are absolute).
	UploadsPath = "/system/v1/uploads"
)

// Uploads serves the tus routes.
type Uploads struct {
	up      *Resumable
	baseURL string
}

// newUploads builds the tus handler; baseURL makes Location absolute.
func newUploads(up *Resumable, baseURL string) *Uploads {
	return &Uploads{up: up, baseURL: strings.TrimRight(baseURL, "/")}
}

// mount binds the routes on the module's /system/v1 group. OPTIONS is open
// (it only describes the server, as tus defines it).
func (u *Uploads) mount(g gin.IRouter) {
	g.OPTIONS("/uploads", u.options)
	g.POST("/uploads", auth.RequireAuth(), tus(u.create))
	g.HEAD("/uploads/:id", auth.RequireAuth(), tus(u.head))
	g.PATCH("/uploads/:id", auth.RequireAuth(), tus(u.patch))
	g.DELETE("/uploads/:id", auth.RequireAuth(), tus(u.terminate))
}

// tus wraps a handler with what every tus answer has: Tus-Resumable, and
// 412 (with Tus-Version) for a request of another protocol version.
func tus(h httpx.Handler) gin.HandlerFunc {
	return httpx.H(func(c *gin.Context) error {
		hdr := c.Writer.Header()
		hdr.Set("Tus-Resumable", tusVersion)
		// Proxies must never answer an offset from a cache.
		hdr.Set("Cache-Control", "no-store")
		if v := c.GetHeader("Tus-Resumable"); v != tusVersion {
			hdr.Set("Tus-Version", tusVersion)
			return conflict(http.StatusPreconditionFailed, "Tus-Resumable must be %s (got %q)", tusVersion, v)
		}
		return h(c)
	})
}

func (u *Uploads) options(c *gin.Context) {
	hdr := c.Writer.Header()
	hdr.Set("Tus-Resumable", tusVersion)
	hdr.Set("Tus-Version", tusVersion)
	hdr.Set("Tus-Extension", tusExtensions)
	hdr.Set("Tus-Checksum-Algorithm", "sha256")
	if limit := u.up.MaxBytes(); limit > 0 {
		hdr.Set("Tus-Max-Size", strconv.FormatInt(limit, 10))
	}
	c.Status(http.StatusNoContent)
	c.Writer.WriteHeaderNow()
}

// create records an upload (201 with its Location) and, with a body
// (creation-with-upload), stores its first chunk; a refused first chunk
// removes the upload again.
func (u *Uploads) create(c *gin.Context) error {
	if c.GetHeader("Upload-Defer-Length") != "" {
		return apierr.BadRequest("Upload-Defer-Length is not supported: send Upload-Length")
	}
	length, err := headerInt(c, "Upload-Length")
	if err != nil {
		return err
	}
	hasBody := c.Request.ContentLength > 0 || (c.Request.ContentLength < 0 && c.Request.Body != nil && c.Request.Body != http.NoBody)
	var ch Chunk
	if hasBody {
		if ch, err = chunkOf(c, 0); err != nil {
			return err
		}
	}
	p := auth.FromContext(c)
	row, err := u.up.Create(c.Request.Context(), p, length, c.GetHeader("Upload-Metadata"))
	if err != nil {
		return err
	}
	hdr := c.Writer.Header()
	if hasBody {
		done, err := u.up.Patch(c.Request.Context(), p, row.ID, ch)
		if err != nil {
			// The client has no Location to resume with: nothing may stay.
			_ = u.up.Terminate(c.Request.Context(), p, row.ID)
			return err
		}
		row = done
		hdr.Set("Upload-Offset", strconv.FormatInt(row.Received, 10))
		if row.FileID != "" {
			hdr.Set("Upload-File-Id", row.FileID)
		}
	}
	hdr.Set("Location", u.baseURL+UploadsPath+"/"+row.ID)
	hdr.Set("Upload-Expires", row.ExpiresAt.UTC().Format(http.TimeFormat))
	c.Status(http.StatusCreated)
	c.Writer.WriteHeaderNow()
	return nil
}

// head answers the upload's offset and length (and its file once complete).
func (u *Uploads) head(c *gin.Context) error {
	row, err := u.up.Get(c.Request.Context(), auth.FromContext(c), c.Param("id"))
	if err != nil {
		return err
	}
	hdr := c.Writer.Header()
	hdr.Set("Upload-Offset", strconv.FormatInt(row.Received, 10))
	hdr.Set("Upload-Length", strconv.FormatInt(row.Length, 10))
	if row.Metadata != "" {
		hdr.Set("Upload-Metadata", row.Metadata)
	}
	u.tail(c, row)
	c.Status(http.StatusOK)
	c.Writer.WriteHeaderNow()
	return nil
}

// patch appends one chunk: 204 with the new offset, and Upload-File-Id once
// the last byte is in.
func (u *Uploads) patch(c *gin.Context) error {
	offset, err := headerInt(c, "Upload-Offset")
	if err != nil {
		return err
	}
	ch, err := chunkOf(c, offset)
	if err != nil {
		return err
	}
	row, err := u.up.Patch(c.Request.Context(), auth.FromContext(c), c.Param("id"), ch)
	if err != nil {
		return err
	}
	c.Writer.Header().Set("Upload-Offset", strconv.FormatInt(row.Received, 10))
	u.tail(c, row)
	c.Status(http.StatusNoContent)
	c.Writer.WriteHeaderNow()
	return nil
}

// tail sets the headers HEAD and PATCH share: the expiry while the upload
// is unfinished, the file once it is done.
func (u *Uploads) tail(c *gin.Context, row *uploadRow) {
	if row.FileID != "" {
		c.Writer.Header().Set("Upload-File-Id", row.FileID)
		return
	}
	c.Writer.Header().Set("Upload-Expires", row.ExpiresAt.UTC().Format(http.TimeFormat))
}

func (u *Uploads) terminate(c *gin.Context) error {
	if err := u.up.Terminate(c.Request.Context(), auth.FromContext(c), c.Param("id")); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	c.Writer.WriteHeaderNow()
	return nil
}

// chunkOf reads the chunk headers of a PATCH (or a creation with upload).
func chunkOf(c *gin.Context, offset int64) (Chunk, error) {
	if ct := c.ContentType(); ct != offsetOctetStream {
		return Chunk{}, apierr.New(apierr.CodeUnsupportedMedia, "a chunk must be sent as %s (got %q)", offsetOctetStream, ct)
	}
	ch := Chunk{Offset: offset, Body: c.Request.Body, Length: c.Request.ContentLength}
	if v := c.GetHeader("Upload-Checksum"); v != "" {
		algo, sum, _ := strings.Cut(strings.TrimSpace(v), " ")
		if algo != "sha256" {
			return Chunk{}, apierr.BadRequest("Upload-Checksum: only sha256 is supported (Tus-Checksum-Algorithm)")
		}
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(sum))
		if err != nil || len(b) != 32 {
			return Chunk{}, apierr.BadRequest("Upload-Checksum must be \"sha256 <base64 of 32 bytes>\"")
		}
		ch.Checksum = b
	}
	return ch, nil
}

// headerInt parses a non-negative integer header; 400 when it is missing or
// not one.
func headerInt(c *gin.Context, name string) (int64, error) {
	v := c.GetHeader(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || strings.TrimSpace(v) != v {
		return 0, apierr.BadRequest("%s must be a non-negative integer (got %q)", name, v)
	}
	return n, nil
}
