package categories

import (
	"net/http"
	"strconv"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
)

// Handler serves the category routes.
type Handler struct {
	svc *Service
}

// Mount binds GET /categories on the module's group.
func (f *Feature) Mount(g gin.IRouter) {
	h := &Handler{svc: f.Service}
	g.GET("/categories", auth.RequireAuth(), httpx.H(h.list))
}

func (h *Handler) list(c *gin.Context) error {
	q := httpx.NewQuery(c)
	kind := q.Enum("kind", KindNames()...)
	if err := q.Err(); err != nil {
		return err
	}
	cats, err := h.svc.List(c.Request.Context(), Kind(kind))
	if err != nil {
		return err
	}
	c.Header(httpx.HeaderTotalCount, strconv.Itoa(len(cats)))
	c.JSON(http.StatusOK, cats)
	return nil
}
