package idempotency_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/idempotency"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/gin-gonic/gin"
)

// BenchmarkMiddleware isolates the middleware's own cost on a route that does
// nothing but answer a small JSON body: "off" is the route without the
// middleware, "none" with it and no key (what every request without a key
// pays: a header lookup), "key" with a new key per request (hash, insert of
// the row, the answer kept: two statements on SQLite), "replay" the same key.
//
//	go test -run '^$' -bench '^BenchmarkMiddleware$' -benchmem github.com/agritrade/api/platform/idempotency
func BenchmarkMiddleware(b *testing.B) {
	s := testkit.NewServer(b, testkit.DB(b, testkit.SQLite), func(*app.Platform) []module.Module { return nil }, testkit.Options{NoValidate: true,
		Configure: func(c *config.Config) { c.Log.Level = "warn" }})
	k := s.Platform.Idempotency
	body := bytes.Repeat([]byte(`{"name":"texel ewes","quantity":40}`), 20) // ~700 bytes, a create body
	for _, mode := range []string{"off", "none", "key", "replay"} {
		b.Run(mode, func(b *testing.B) {
			gin.SetMode(gin.ReleaseMode)
			e := gin.New()
			e.Use(func(c *gin.Context) { auth.WithPrincipal(c, &ann); c.Next() })
			if mode != "off" {
				e.Use(k.Middleware())
			}
			e.POST("/things", func(c *gin.Context) {
				c.JSON(http.StatusOK, gin.H{"status": "success", "message": "created", "id": "0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b"})
			})
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := httptest.NewRequest(http.MethodPost, "/things", bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				switch mode {
				case "key":
					r.Header.Set(idempotency.Header, mode+"-"+b.Name()+"-"+strconv.Itoa(i))
				case "replay":
					r.Header.Set(idempotency.Header, "replay")
				}
				w := httptest.NewRecorder()
				e.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
		})
	}
}
