package experts

import (
	"net/http"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
)

// Confirmation is the answer of both routes.
type Confirmation struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	ID      string `json:"id"`
}

// Mount binds the expert routes (both need a token).
func (f *Feature) Mount(g gin.IRouter) {
	h := handlers{s: f.Service}
	r := g.Group("/experts", auth.RequireAuth())
	r.POST("/questions", httpx.H(h.question))
	r.POST("/grain-samples", httpx.H(h.grainSample))
}

type handlers struct{ s *Service }

func (h handlers) question(c *gin.Context) error {
	var in QuestionInput
	if err := httpx.BindJSON(c, &in); err != nil {
		return err
	}
	req, err := h.s.Submit(c.Request.Context(), auth.FromContext(c), NewQuestion(in))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, Confirmation{Status: "success", Message: "Your question has been sent to our experts.", ID: req.ID})
	return nil
}

func (h handlers) grainSample(c *gin.Context) error {
	var in GrainSampleInput
	if err := httpx.BindJSON(c, &in); err != nil {
		return err
	}
	req, err := h.s.Submit(c.Request.Context(), auth.FromContext(c), NewGrainSample(in))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, Confirmation{Status: "success", Message: "Your grain sample request has been sent to our experts.", ID: req.ID})
	return nil
}
