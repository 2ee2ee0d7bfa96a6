package refdata

import (
	"net/http"
	"strconv"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/tabular"
	"github.com/gin-gonic/gin"
)

// Cache-Control of the answers: reference data changes rarely, so clients and
// shared caches may keep it five minutes (and revalidate with If-None-Match).
// The settings routes need a token, so only private caches may keep those.
const (
	cachePublic  = "public, max-age=300"
	cachePrivate = "private, max-age=300"
)

// Handler serves the reference-data routes.
type Handler struct {
	svc *Service
	// maxUpload caps an import upload in bytes.
	maxUpload int64
	// gate limits the imports in flight on this replica (nil: none).
	gate *tabular.Gate
}

// Mount binds the routes under the module's group.
func (f *Feature) Mount(g gin.IRouter) {
	h := &Handler{svc: f.Service, maxUpload: f.maxUpload, gate: f.gate}
	g.GET("/settings", auth.RequireAuth(), httpx.H(h.settings))
	g.GET("/settings/:country", auth.RequireAuth(), httpx.H(h.settings))
	g.GET("/countries", httpx.H(h.countries))
	g.GET("/regions", httpx.H(h.regions))
	g.GET("/commodities", httpx.H(h.commodities))
	g.GET("/commodities/:id/specification", auth.RequireAuth(), httpx.H(h.specification))
	g.POST("/commodities/varieties/import", auth.RequireRole(auth.RoleAdmin), httpx.H(h.importVarieties))
}

func (h *Handler) settings(c *gin.Context) error {
	rep, err := h.svc.Settings(c.Request.Context(), c.Param("country"))
	if err != nil {
		return err
	}
	respond(c, rep, cachePrivate, false)
	return nil
}

func (h *Handler) countries(c *gin.Context) error {
	rep, err := h.svc.Countries(c.Request.Context())
	if err != nil {
		return err
	}
	respond(c, rep, cachePublic, false)
	return nil
}

func (h *Handler) regions(c *gin.Context) error {
	q := httpx.NewQuery(c)
	iso := q.String("countryISO")
	if err := q.Err(); err != nil {
		return err
	}
	rep, err := h.svc.Regions(c.Request.Context(), iso)
	if err != nil {
		return err
	}
	respond(c, rep, cachePublic, false)
	return nil
}

func (h *Handler) commodities(c *gin.Context) error {
	q := httpx.NewQuery(c)
	iso := q.String("countryISO")
	if err := q.Err(); err != nil {
		return err
	}
	rep, err := h.svc.Commodities(c.Request.Context(), iso)
	if err != nil {
		return err
	}
	respond(c, rep, cachePublic, true)
	return nil
}

// respond writes a cached representation (gzip when the client accepts it),
// or 304 when the client has it.
func respond(c *gin.Context, rep Representation, cacheControl string, counted bool) {
	if counted {
		c.Header(httpx.HeaderTotalCount, strconv.Itoa(rep.Count))
	}
	httpx.WriteRepresentation(c, "application/json; charset=utf-8", rep.Body, rep.Gzip, rep.ETag, cacheControl)
}

func (h *Handler) specification(c *gin.Context) error {
	q := httpx.NewQuery(c)
	typ, grade := q.String("commodityType"), q.String("commodityGrade")
	if err := q.Err(); err != nil {
		return err
	}
	spec, err := h.svc.Specification(c.Request.Context(), c.Param("id"), typ, grade)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, spec)
	return nil
}

func (h *Handler) importVarieties(c *gin.Context) error {
	httpx.LimitBody(c, h.maxUpload)
	r, _, err := tabular.FromRequest(c.Request, "file", tabular.Options{MaxBytes: h.maxUpload, MaxRows: MaxImportRows, MaxCellBytes: MaxImportCellBytes, MaxTextBytes: MaxImportTextBytes, Gate: h.gate})
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // removes a spooled XLSX; nothing to report
	done := tabular.Track("varieties")
	res, err := h.svc.ImportVarieties(c.Request.Context(), auth.FromContext(c), r)
	done(res, err)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, res)
	return nil
}
