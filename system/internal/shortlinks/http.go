package shortlinks

import (
	"net/http"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/ratelimit"
	"github.com/gin-gonic/gin"
)

// Confirmation is the answer of a creation.
type Confirmation struct {
	Status   string `json:"status"`
	Message  string `json:"message"`
	ID       string `json:"id"`
	ShortURL string `json:"shortUrl"`
	Code     string `json:"code"`
}

// RateScope names the rate-limit buckets of short-link creation.
const RateScope = "shortlinks"

// Mount binds POST /short-urls (public, rate limited per client IP) and the
// stats route under api.
func (f *Feature) Mount(api gin.IRouter) {
	h := handlers{s: f.svc}
	api.POST("/short-urls", ratelimit.Middleware(f.limiter, RateScope), httpx.H(h.create))
	api.GET("/short-urls/:code", auth.RequireAuth(), httpx.H(h.stats))
}

// MountRoot binds the redirect GET /s/{code} at the root: it lives outside
// the module's /system/v1 group but is the module's.
func (f *Feature) MountRoot(root gin.IRouter) {
	h := handlers{s: f.svc}
	root.GET("/s/:code", httpx.H(h.follow))
}

type handlers struct{ s *Service }

func (h handlers) create(c *gin.Context) error {
	var in Input
	if err := httpx.BindJSON(c, &in); err != nil {
		return err
	}
	out, err := h.s.Create(c.Request.Context(), auth.FromContext(c), in)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, Confirmation{Status: "success", Message: "Short URL ready.", ID: out.ID, ShortURL: out.ShortURL, Code: out.Code})
	return nil
}

func (h handlers) follow(c *gin.Context) error {
	target, err := h.s.Follow(c.Request.Context(), c.Param("code"), Visit{Referer: c.GetHeader("Referer"), UserAgent: c.GetHeader("User-Agent")})
	if err != nil {
		return err
	}
	// Every visit must reach the server to be counted: no caching of the redirect.
	c.Header("Cache-Control", "no-store")
	c.Header("Location", target)
	c.Status(http.StatusFound)
	return nil
}

func (h handlers) stats(c *gin.Context) error {
	st, err := h.s.Stats(c.Request.Context(), auth.FromContext(c), c.Param("code"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, st)
	return nil
}
