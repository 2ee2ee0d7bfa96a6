package imports

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
)

// multipartMemory is how much of a multipart body is held in memory; the rest
// of the file goes to a temporary file, so a 100 MiB upload costs disk, not RAM.
const multipartMemory = 1 << 20

// Opener opens an uploaded file as rows (CSV or XLSX, detected from the bytes).
type Opener func(r io.Reader, filename string) (RowReader, error)

// Handler serves the batch upload.
type Handler struct {
	svc       *Service
	open      Opener
	maxUpload int64
}

// NewHandler returns the handler; maxUpload caps the request body in bytes.
func NewHandler(svc *Service, open Opener, maxUpload int64) *Handler {
	return &Handler{svc: svc, open: open, maxUpload: maxUpload}
}

// Mount binds the route on the /loads group (authentication required).
func (h *Handler) Mount(g *gin.RouterGroup) {
	g.POST("/batch", httpx.H(h.upload))
}

func (h *Handler) upload(c *gin.Context) error {
	if !strings.HasPrefix(c.ContentType(), "multipart/form-data") {
		return apierr.BadRequest("the request must be multipart/form-data with a file part")
	}
	httpx.LimitBody(c, h.maxUpload)
	if err := c.Request.ParseMultipartForm(multipartMemory); err != nil {
		if httpx.IsTooLarge(err) {
			return apierr.New(apierr.CodePayloadTooLarge, "the upload is larger than %d MiB", h.maxUpload>>20)
		}
		return apierr.Wrap(err, apierr.CodeBadRequest, "the multipart body could not be read")
	}
	form := c.Request.MultipartForm
	defer func() { _ = form.RemoveAll() }()
	p := auth.FromContext(c)
	def := Defaults{OrganiserID: strings.TrimSpace(c.Request.FormValue("organisationId")), OrganiserName: strings.TrimSpace(c.Request.FormValue("organisationName"))}
	var f apierr.Fields
	files := form.File["file"]
	f.Check(len(files) == 1, "file", "required", "exactly one file part is required")
	if def.OrganiserID != "" && def.OrganiserName == "" {
		f.Add("organisationName", "required", "is required when organisationId is given", nil)
	}
	if err := f.Err(); err != nil {
		return err
	}
	switch {
	case def.OrganiserID == "":
		def.OrganiserID, def.OrganiserName = p.OrgID, p.OrgName
	case !p.MemberOf(def.OrganiserID):
		return apierr.Forbidden("you are not a member of organisation %s", def.OrganiserID)
	}
	file, err := files[0].Open()
	if err != nil {
		return apierr.Internal(err)
	}
	defer file.Close()
	rows, err := h.open(file, files[0].Filename)
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			return ae
		}
		return apierr.Wrap(err, apierr.CodeBadRequest, "the file could not be read")
	}
	defer rows.Close()
	res, err := h.svc.Import(c.Request.Context(), p, rows, def)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, res)
	return nil
}
