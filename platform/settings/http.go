package settings

import (
	"net/http"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
)

// Mount binds GET and PUT <group>/admin/settings for one module, admin only.
func (s *Service) Mount(g *gin.RouterGroup, module string) {
	admin := g.Group("/admin", auth.RequireRole(auth.RoleAdmin))
	admin.GET("/settings", func(c *gin.Context) { c.JSON(http.StatusOK, s.Get(module)) })
	admin.PUT("/settings", httpx.H(func(c *gin.Context) error {
		var in Request
		if err := httpx.BindJSON(c, &in); err != nil {
			return err
		}
		doc, err := s.Put(c.Request.Context(), module, auth.FromContext(c).UserID, in)
		if err != nil {
			return err
		}
		httpx.Logger(c).WithField("level", doc.Logging.Level).WithField("filter", doc.Logging.Filter).Info("module log settings changed")
		c.JSON(http.StatusOK, doc)
		return nil
	}))
}
