package imports

import (
	"net/http"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/tabular"
	"github.com/gin-gonic/gin"
)

// Handler serves the batch upload.
type Handler struct {
	svc       *Service
	maxUpload int64
	gate      *tabular.Gate
}

// newHandler returns the handler; maxUpload caps the upload in bytes, gate
// (nil: none) limits the imports in flight on this replica.
func newHandler(svc *Service, maxUpload int64, gate *tabular.Gate) *Handler {
	return &Handler{svc: svc, maxUpload: maxUpload, gate: gate}
}

// mount binds the route on the /loads group (authentication required).
func (h *Handler) mount(g gin.IRouter) {
	g.POST("/batch", httpx.H(h.upload))
}

// upload streams the file part straight into the import: a CSV is never held
// whole (an XLSX is spooled to a temporary file by tabular), and rows go to the
// database BatchSize at a time. The form fields must come before the file part.
func (h *Handler) upload(c *gin.Context) error {
	httpx.LimitBody(c, h.maxUpload)
	rows, fields, err := tabular.FromRequest(c.Request, "file", tabular.Options{MaxBytes: h.maxUpload, Gate: h.gate})
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }() // read to the end or abandoned: nothing to report
	if err := httpx.CheckTexts(fields); err != nil {
		return err
	}
	p := auth.FromContext(c)
	def := Defaults{OrganiserID: strings.TrimSpace(fields["organisationId"]), OrganiserName: strings.TrimSpace(fields["organisationName"])}
	switch {
	case def.OrganiserID == "":
		def.OrganiserID, def.OrganiserName = p.OrgID, p.OrgName
	case def.OrganiserName == "":
		var f apierr.Fields
		f.Add("organisationName", "required", "is required when organisationId is given", nil)
		return f.Err()
	case !p.MemberOf(def.OrganiserID):
		return apierr.Forbidden("you are not a member of organisation %s", def.OrganiserID)
	}
	done := tabular.Track("loads")
	res, err := h.svc.Import(c.Request.Context(), p, rows, def)
	done(res, err)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, res)
	return nil
}
