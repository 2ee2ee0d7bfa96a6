// Package files is the HTTP face of the file store: upload, download,
// information and archive under /system/v1/files (API.md).
//
// The rules (fields, bucket content, size limit, permissions, signed URLs)
// and the storage live in platform/filestore, because every module resolves
// file references through it; this feature binds the multipart form as a
// stream, and serves the bytes with ranges, entity tags and a safe
// Content-Disposition.
package files

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
	"github.com/sirupsen/logrus"
)

// Handler serves the file routes.
type Handler struct {
	files *filestore.Service
	log   *logrus.Entry
}

// newHandler builds the handler over the platform's file store.
func newHandler(files *filestore.Service, log *logrus.Entry) *Handler {
	return &Handler{files: files, log: log}
}

// mount binds the routes on the module's /system/v1 group. Download checks
// its own credentials: a bearer token or a signed URL token.
func (h *Handler) mount(g gin.IRouter) {
	g.POST("/files", auth.RequireAuth(), httpx.H(h.upload))
	g.GET("/files/:id", httpx.H(h.download))
	g.DELETE("/files/:id", auth.RequireAuth(), httpx.H(h.archive))
	g.GET("/files/:id/info", auth.RequireAuth(), httpx.H(h.info))
}

// upload streams the multipart form: text fields first, then the file part
// straight into the store.
func (h *Handler) upload(c *gin.Context) error {
	if limit := h.files.MaxBytes(); limit > 0 {
		if c.Request.ContentLength > limit+FormOverhead {
			return apierr.New(apierr.CodePayloadTooLarge, "the upload is larger than the limit of %d MiB", limit>>20)
		}
		httpx.LimitBody(c, limit+FormOverhead)
	}
	mr, err := multipartReader(c.Request)
	if err != nil {
		return err
	}
	f, part, err := readForm(mr)
	if err != nil {
		return err
	}
	in := f.in
	if part != nil {
		in.Body = &fileBody{part: part, mr: mr, form: f}
		in.Rest = f.rest
	}
	rec, err := h.files.Put(c.Request.Context(), auth.FromContext(c), in)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, rec)
	return nil
}

// download answers the bytes, to a bearer token or a signed URL token.
func (h *Handler) download(c *gin.Context) error {
	q := httpx.NewQuery(c)
	inline := q.Bool("stream", false)
	if err := q.Err(); err != nil {
		return err
	}
	var (
		rec *filestore.Record
		err error
	)
	if token, ok := c.GetQuery("token"); ok {
		rec, err = h.files.GetSigned(c.Request.Context(), c.Param("id"), token)
	} else if p := auth.FromContext(c); p != nil {
		rec, err = h.files.Get(c.Request.Context(), p, c.Param("id"))
	} else {
		err = apierr.Unauthorized("downloading needs a bearer token or a signed URL")
	}
	if err != nil {
		return err
	}
	if raw, ok := c.GetQuery("thumb"); ok {
		return h.thumbnail(c, rec, raw)
	}
	return h.serve(c, rec, inline)
}

// thumbnail answers a thumbnail of the file the caller may read (API.md
// "Thumbnails"): the size and the file's type are checked first (400), a
// matching If-None-Match answers 304 before the store is asked anything,
// then the stored thumbnail (made on the first request) is served like a
// download, inline.
func (h *Handler) thumbnail(c *gin.Context, rec *filestore.Record, raw string) error {
	spec, err := h.files.ThumbSpec(rec, raw)
	if err != nil {
		return err
	}
	if notModified(c, filestore.ThumbETag(rec, spec)) {
		return nil
	}
	t, err := h.files.Thumbnail(c.Request.Context(), rec, spec)
	if err != nil {
		return err
	}
	return h.serve(c, t, true)
}

// notModified sets the validators of a download and answers 304 when the
// client's If-None-Match names etag.
func notModified(c *gin.Context, etag string) bool {
	hdr := c.Writer.Header()
	hdr.Set("ETag", etag)
	// Private: the bytes are behind a token. no-cache: revalidate with the
	// ETag, so that an archived file stops being served from caches.
	hdr.Set("Cache-Control", "private, no-cache")
	if inm := c.GetHeader("If-None-Match"); inm != "" && etagMatches(inm, etag) {
		c.Status(http.StatusNotModified)
		c.Writer.WriteHeaderNow()
		return true
	}
	return false
}

// serve writes the content with its validators: 304 for a matching
// If-None-Match, 206 for one satisfiable Range (unless If-Range names another
// version), 416 for an unsatisfiable one, 200 otherwise.
func (h *Handler) serve(c *gin.Context, rec *filestore.Record, inline bool) error {
	hdr := c.Writer.Header()
	etag := rec.ETag()
	if notModified(c, etag) {
		return nil
	}
	hdr.Set("Accept-Ranges", "bytes")
	status, offset, length := http.StatusOK, int64(0), rec.Size
	if rh := c.GetHeader("Range"); rh != "" && ifRangeAllows(c.GetHeader("If-Range"), etag) {
		r, res := parseRange(rh, rec.Size)
		switch res {
		case rangeUnsatisfiable:
			hdr.Del("Accept-Ranges")
			hdr.Set("Content-Range", "bytes */"+strconv.FormatInt(rec.Size, 10))
			e := apierr.New(apierr.CodeBadRequest, "the range lies outside the file of %d bytes", rec.Size)
			e.HTTPStatus = http.StatusRequestedRangeNotSatisfiable
			return e
		case rangePartial:
			status, offset, length = http.StatusPartialContent, r.start, r.length
			hdr.Set("Content-Range", "bytes "+strconv.FormatInt(r.start, 10)+"-"+strconv.FormatInt(r.start+r.length-1, 10)+"/"+strconv.FormatInt(rec.Size, 10))
		}
	}
	body, err := h.files.Read(c.Request.Context(), rec, offset, length)
	if err != nil {
		hdr.Del("Content-Range")
		return err
	}
	defer func() { _ = body.Close() }()
	hdr.Set("Content-Type", rec.ContentType)
	hdr.Set("Content-Length", strconv.FormatInt(length, 10))
	// The bytes are the uploader's: a browser must never guess another type
	// than the sniffed one, nor run a document that can script (HTML, XML,
	// SVG) as a page of the API's origin; those are always attachments, in a
	// sandbox. PDFs, images and videos stay viewable inline.
	hdr.Set("X-Content-Type-Options", "nosniff")
	if activeContent(rec.ContentType) {
		inline = false
		hdr.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	}
	hdr.Set("Content-Disposition", contentDisposition(inline, rec.Name))
	c.Status(status)
	if httpx.IsHead(c) {
		// HEAD: the headers above are the answer; reading the bytes would be waste.
		c.Writer.WriteHeaderNow()
		return nil
	}
	// A local file goes to the connection through the kernel (sendfile).
	if _, err := httpx.Stream(c, body); err != nil {
		// Headers are gone: the client sees a short body; the log says why.
		httpx.Logger(c).WithError(err).WithField("file", rec.ID).Warn("download interrupted")
	}
	return nil
}

// ifRangeAllows tells whether a Range applies: without If-Range always, with
// it only when it names the current entity tag (a date is not a validator
// here: files have no modification time).
func ifRangeAllows(ifRange, etag string) bool {
	return ifRange == "" || ifRange == etag
}

// activeContent tells whether a browser could run scripts in a document of
// this type.
func activeContent(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	// text/xml, application/xml and every +xml type (SVG, XHTML) end in "xml".
	return mt == "text/html" || mt == "text/xsl" || strings.HasSuffix(mt, "xml")
}

func (h *Handler) info(c *gin.Context) error {
	rec, err := h.files.Get(c.Request.Context(), auth.FromContext(c), c.Param("id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, rec.Info())
	return nil
}

func (h *Handler) archive(c *gin.Context) error {
	id := c.Param("id")
	if err := h.files.Archive(c.Request.Context(), auth.FromContext(c), id); err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"status": "success", "message": "the file is archived", "id": id})
	return nil
}
