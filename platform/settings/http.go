package settings

import (
	"net/http"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/logging"
	"github.com/gin-gonic/gin"
)

// Confirmation is the answer of the PUT: the seed's confirmation body with the
// settings now applied (API.md), level spelled as it was sent.
type Confirmation struct {
	Status  string           `json:"status"`
	Message string           `json:"message"`
	Logging logging.Settings `json:"logging"`
}

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
		c.JSON(http.StatusOK, Confirmation{Status: "success", Message: "the log settings of " + module + " are applied on every replica", Logging: doc.Logging})
		return nil
	}))
}
