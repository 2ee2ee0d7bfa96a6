package admin

import (
	"net/http"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
)

// Mount binds POST /cache (admin only) under the module's group.
func (f *Feature) Mount(g gin.IRouter) {
	h := &handler{svc: f.svc}
	g.POST("/cache", auth.RequireRole(auth.RoleAdmin), httpx.H(h.clear))
}

type handler struct{ svc *Service }

func (h *handler) clear(c *gin.Context) error {
	var req ClearRequest
	if err := httpx.BindJSON(c, &req); err != nil {
		return err
	}
	clear, err := req.Validate()
	if err != nil {
		return err
	}
	msg, err := h.svc.Clear(c.Request.Context(), clear)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"status": "success", "message": msg})
	return nil
}
