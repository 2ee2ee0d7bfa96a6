package messaging

import (
	"net/http"
	"strconv"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
)

// Mount binds the conversation routes (all need a token).
func (f *Feature) Mount(g gin.IRouter) {
	h := handlers{s: f.svc}
	r := g.Group("/conversations", auth.RequireAuth())
	r.POST("", httpx.H(h.create))
	r.GET("", httpx.H(h.list))
	r.GET("/listing/:id", httpx.H(h.forListing))
	r.GET("/:id", httpx.H(h.get))
	r.POST("/:id/messages", httpx.H(h.addMessage))
}

type handlers struct{ s *Service }

func (h handlers) create(c *gin.Context) error {
	var in MessageInput
	if err := httpx.BindJSON(c, &in); err != nil {
		return err
	}
	conv, err := h.s.Send(c.Request.Context(), auth.FromContext(c), "", in)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, conv)
	return nil
}

func (h handlers) addMessage(c *gin.Context) error {
	var in MessageInput
	if err := httpx.BindJSON(c, &in); err != nil {
		return err
	}
	conv, err := h.s.Send(c.Request.Context(), auth.FromContext(c), c.Param("id"), in)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, conv)
	return nil
}

func (h handlers) list(c *gin.Context) error {
	q := httpx.NewQuery(c)
	explicitDesc := q.Has("sortDesc")
	pg := q.Page(Sortable, "", false)
	since := q.Since("updatedSinceUTC")
	if err := q.Err(); err != nil {
		return err
	}
	switch {
	case pg.SortBy == "" && since != nil:
		// Catching up: the oldest change first, so a client can page forward
		// and keep the last updatedAtUTC it saw as its next updatedSinceUTC.
		pg.SortBy = "updatedAtUTC"
	case pg.SortBy == "":
		// Default order: the latest activity first, unless sortDesc says otherwise.
		pg.SortBy = "updatedAtUTC"
		if !explicitDesc {
			pg.SortDesc = true
		}
	}
	page, err := h.s.List(c.Request.Context(), auth.FromContext(c), pg, since)
	if err != nil {
		return err
	}
	c.Header(httpx.HeaderTotalCount, strconv.Itoa(page.TotalDocs))
	c.JSON(http.StatusOK, page)
	return nil
}

func (h handlers) get(c *gin.Context) error {
	conv, err := h.s.Get(c.Request.Context(), auth.FromContext(c), c.Param("id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, conv)
	return nil
}

func (h handlers) forListing(c *gin.Context) error {
	conv, err := h.s.ForListing(c.Request.Context(), auth.FromContext(c), c.Param("id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, conv)
	return nil
}
