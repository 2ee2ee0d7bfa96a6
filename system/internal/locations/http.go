package locations

import (
	"net/http"
	"strconv"

	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/ratelimit"
	"github.com/agritrade/api/system/internal/locations/place"
	"github.com/gin-gonic/gin"
)

// RateLimitScope names the location routes' rate-limit buckets.
const RateLimitScope = "locations"

// Mount binds the four public location routes under r, each limited per
// client IP.
func (f *Feature) Mount(r gin.IRouter) {
	h := &handler{svc: f.Service}
	g := r.Group("/locations", ratelimit.Middleware(f.limiter, RateLimitScope))
	g.GET("/search", httpx.H(h.search))
	g.GET("/address", httpx.H(h.byAddressID))
	g.GET("/coordinates", httpx.H(h.byCoordinates))
	g.GET("/three-word-address", httpx.H(h.byThreeWords))
}

type handler struct{ svc *Service }

func (h *handler) search(c *gin.Context) error {
	q := httpx.NewQuery(c)
	limit, offset := q.Int("limit", place.DefaultLimit), q.Int("offset", 0)
	if err := q.Err(); err != nil {
		return err
	}
	sq, err := place.NewSearchQuery(q.String("query"), q.String("id"), q.String("countryISO"), limit, offset)
	if err != nil {
		return err
	}
	res, total, err := h.svc.Search(c.Request.Context(), sq)
	if err != nil {
		return err
	}
	c.Header(httpx.HeaderTotalCount, strconv.Itoa(total))
	c.JSON(http.StatusOK, res)
	return nil
}

func (h *handler) byAddressID(c *gin.Context) error {
	q := httpx.NewQuery(c)
	loc, err := h.svc.ByAddressID(c.Request.Context(), q.String("id"), q.String("source"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, loc)
	return nil
}

func (h *handler) byCoordinates(c *gin.Context) error {
	q := httpx.NewQuery(c)
	// A missing value reads as 0, which is in range: it is reported once, as required.
	point := place.NewCoordinates(q.RequiredFloat("lat"), q.RequiredFloat("lon"), q.Fields())
	if err := q.Err(); err != nil {
		return err
	}
	loc, err := h.svc.ByCoordinates(c.Request.Context(), point)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, loc)
	return nil
}

func (h *handler) byThreeWords(c *gin.Context) error {
	q := httpx.NewQuery(c)
	raw := q.RequiredString("query")
	if err := q.Err(); err != nil {
		return err
	}
	loc, err := h.svc.ByThreeWords(c.Request.Context(), raw)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, loc)
	return nil
}
