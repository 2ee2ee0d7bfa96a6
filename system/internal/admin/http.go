package admin

import (
	"net/http"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
)

// Mount binds POST /cache (admin only) under the module's group.
func Mount(g *gin.RouterGroup, svc *Service) {
	g.POST("/cache", auth.RequireRole(auth.RoleAdmin), httpx.H(func(c *gin.Context) error {
		var req ClearRequest
		if err := httpx.BindJSON(c, &req); err != nil {
			return err
		}
		clear, err := req.Validate()
		if err != nil {
			return err
		}
		msg, err := svc.Clear(c.Request.Context(), clear)
		if err != nil {
			return err
		}
		c.JSON(http.StatusOK, gin.H{"status": "success", "message": msg})
		return nil
	}))
}
