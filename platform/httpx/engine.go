// Package httpx builds the gin engine every module mounts on and holds the
// request plumbing they share: request ids, access log, metrics, body limits,
// JSON binding into validation errors, query and pagination parsing, and
// streaming CSV.
package httpx

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/http"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/logging"
	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
	"go.opentelemetry.io/otel/trace"
)

// Header names the API sets on every response.
const (
	HeaderRequestID  = "X-Request-ID"
	HeaderAPIVersion = "X-API-Version"
	HeaderTotalCount = "X-Total-Count"
)

const (
	loggerKey    = "httpx.logger"
	logModuleKey = "httpx.log_module"
	moduleKey    = "httpx.module"
	requestKey   = "httpx.request_id"
)

// The canonical forms of the headers every response carries: assigning them
// to the header map directly spares net/http's canonicalisation on each
// request (Header.Set).
const (
	canonRequestID  = "X-Request-Id"
	canonAPIVersion = "X-Api-Version"
)

// Options configure the engine.
type Options struct {
	Debug        bool
	MaxBodyBytes int64
	Log          *logging.Module // the platform logger, used outside modules
	Version      string          // X-API-Version of platform routes, e.g. "platform/1.0.0"
	Metrics      *Metrics
	CORSOrigins  []string
	// Unavailable classifies the dependencies' failures for the error
	// middleware (503 instead of 500; see apierr.Classifier).
	Unavailable []apierr.Classifier
	// Tracing, when set, runs first: the server span of the request (and the
	// trace context every later middleware and log entry sees).
	Tracing gin.HandlerFunc
}

// NewEngine returns a gin engine with the shared middleware in place.
func NewEngine(o Options) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.ContextWithFallback = true
	e.RemoveExtraSlash = true
	// gin's redirects answer with an HTML body; the API answers JSON only, so a
	// path with a trailing slash is a 404 that names the path without it.
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	// A known path with another method is 405 with Allow (gin computes Allow).
	e.HandleMethodNotAllowed = true
	if err := e.SetTrustedProxies(nil); err != nil {
		panic(err) // nil is always accepted
	}
	// First, so that a HEAD re-dispatched as GET runs the chain only once.
	e.Use(headAsGet(e))
	if o.Tracing != nil {
		e.Use(o.Tracing)
	}
	e.Use(requestID(o.Log, o.Version))
	e.Use(cors(o.CORSOrigins))
	e.Use(accessLog(o.Metrics))
	e.Use(apierr.Middleware(apierr.RenderOptions{Debug: o.Debug, Logger: func(c *gin.Context) logrus.FieldLogger { return Logger(c) }, Unavailable: o.Unavailable}))
	e.Use(limitJSONBody(o.MaxBodyBytes))
	e.Use(checkParams())
	e.NoRoute(func(c *gin.Context) {
		path := c.Request.URL.Path
		if len(path) > 1 && strings.HasSuffix(path, "/") {
			apierr.Render(c, apierr.New(apierr.CodeNotFound, "no route for %s %s (paths have no trailing slash: %s)", c.Request.Method, path, strings.TrimRight(path, "/")))
			return
		}
		apierr.Render(c, apierr.New(apierr.CodeNotFound, "no route for %s %s", c.Request.Method, path))
	})
	e.NoMethod(func(c *gin.Context) {
		allow := c.Writer.Header().Get("Allow")
		if hasMethod(allow, http.MethodGet) && !hasMethod(allow, http.MethodHead) {
			allow += ", " + http.MethodHead
			c.Writer.Header().Set("Allow", allow)
		}
		apierr.Render(c, apierr.New(apierr.CodeMethodNotAllowed, "%s is not allowed on %s (allowed: %s)", c.Request.Method, c.Request.URL.Path, allow))
	})
	return e
}

func hasMethod(allow, method string) bool {
	for _, m := range strings.Split(allow, ",") {
		if strings.TrimSpace(m) == method {
			return true
		}
	}
	return false
}

type headKey struct{}

// headAsGet answers HEAD on every GET route (RFC 9110 9.3.2) without each
// module registering it: a HEAD that matched no route of its own is routed
// again as a GET. The clone keeps net/http's original request, whose method
// is still HEAD, so the server sends the GET's status and headers and
// discards the body; handlers that can skip producing a body ask IsHead.
func headAsGet(e *gin.Engine) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.Method != http.MethodHead || c.FullPath() != "" {
			c.Next()
			return
		}
		// gin has set Allow for a 405 before this chain runs; the GET answers.
		c.Writer.Header().Del("Allow")
		r := c.Request.Clone(context.WithValue(c.Request.Context(), headKey{}, true))
		r.Method = http.MethodGet
		c.Request = r
		e.HandleContext(c)
		c.Abort()
	}
}

// IsHead tells whether the client asked HEAD for this GET route: the body it
// writes is discarded, so a handler may skip making it.
func IsHead(c *gin.Context) bool {
	v, _ := c.Request.Context().Value(headKey{}).(bool)
	return v
}

var safeRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

func requestID(log *logging.Module, version string) gin.HandlerFunc {
	// One value slice for every response: nothing appends to it in place
	// (Header.Add of a second value copies it first, as its capacity is 1).
	var versionValue []string
	if version != "" {
		versionValue = []string{version}
	}
	return func(c *gin.Context) {
		// The map under the canonical key: GetHeader would canonicalise
		// "X-Request-ID" (a new string) on every request.
		var id string
		if v := c.Request.Header[canonRequestID]; len(v) > 0 {
			id = v[0]
		}
		if !safeRequestID.MatchString(id) {
			id = newRequestID()
		}
		c.Set(requestKey, id)
		// In the request's context too: what a feature logs with it
		// (logging.Ctx) names the request, like the request's own lines.
		c.Request = c.Request.WithContext(logging.WithRequestID(c.Request.Context(), id))
		h := c.Writer.Header()
		h[canonRequestID] = []string{id}
		if versionValue != nil {
			h[canonAPIVersion] = versionValue
		}
		if log != nil {
			c.Set(logModuleKey, log)
		}
		c.Next()
	}
}

// newRequestID is a UUIDv7 (time-ordered, as the records' ids) whose random
// bits come from math/rand/v2: the runtime's ChaCha8 generator, seeded from
// the system and per thread. A request id must be unique, not secret, and
// uuid.NewV7 reads crypto/rand (a locked DRBG) on every request.
func newRequestID() string {
	var u uuid.UUID
	a, b := rand.Uint64(), rand.Uint64() //nolint:gosec // a request id, no secret
	binary.BigEndian.PutUint64(u[0:8], uint64(time.Now().UnixMilli())<<16|a&0xffff)
	binary.BigEndian.PutUint64(u[8:16], b)
	u[6] = 0x70 | u[6]&0x0f // version 7
	u[8] = 0x80 | u[8]&0x3f // RFC 9562 variant
	return u.String()
}

// Scope marks the routes of a module: its X-API-Version header and its logger,
// so that the module's log settings govern its requests' logs too.
func Scope(log *logging.Module, version string) gin.HandlerFunc {
	versionValue := []string{log.Name() + "/" + version}
	// Boxed once: a string put in the context's map as any is a new
	// allocation on every request.
	var name any = log.Name()
	return func(c *gin.Context) {
		c.Writer.Header()[canonAPIVersion] = versionValue
		c.Set(moduleKey, name)
		c.Set(logModuleKey, log)
		if _, made := c.Get(loggerKey); made {
			c.Set(loggerKey, (*logrus.Entry)(nil)) // made with the platform's logger: made again with the module's
		}
		c.Next()
	}
}

// requestEntry is the request's logger: its id, and its trace when one is
// recorded (the logging hook reads trace and span ids from the context).
func requestEntry(log *logging.Module, c *gin.Context, id string) *logrus.Entry {
	e := log.Component("http").WithField(logging.RequestIDField, id)
	if ctx := c.Request.Context(); trace.SpanContextFromContext(ctx).IsValid() {
		// e is a new entry of our own: set its context rather than copy it
		// again with WithContext (twice a request, a map copy each time).
		e.Context = ctx
	}
	return e
}

// RequestID returns the id of the request.
func RequestID(c *gin.Context) string { return c.GetString(requestKey) }

// Module returns the name of the module serving the request, or "platform".
func Module(c *gin.Context) string {
	if m := c.GetString(moduleKey); m != "" {
		return m
	}
	return "platform"
}

// Logger returns the request's logger. It is made on first use: at the
// levels production runs at most requests log nothing, and a logrus entry
// costs allocations on every request that makes one.
func Logger(c *gin.Context) *logrus.Entry {
	if v, ok := c.Get(loggerKey); ok {
		if e, ok := v.(*logrus.Entry); ok && e != nil {
			return e
		}
	}
	if log := logModule(c); log != nil {
		e := requestEntry(log, c, RequestID(c))
		c.Set(loggerKey, e)
		return e
	}
	return logrus.NewEntry(logrus.StandardLogger()).WithField("request_id", RequestID(c))
}

// logModule is the logger of the module serving the request (the platform's
// before a module's routes are reached), or nil outside the engine.
func logModule(c *gin.Context) *logging.Module {
	if v, ok := c.Get(logModuleKey); ok {
		if m, ok := v.(*logging.Module); ok {
			return m
		}
	}
	return nil
}

func accessLog(m *Metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		elapsed := time.Since(start)
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		status := c.Writer.Status()
		if m != nil {
			m.observe(Module(c), c.Request.Method, route, status, elapsed)
		}
		level := logrus.InfoLevel
		switch {
		case status >= http.StatusInternalServerError:
			level = logrus.WarnLevel
		case route == "/healthz" || route == "/readyz" || route == "/metrics":
			level = logrus.DebugLevel
		}
		// The fields are built only for a line that is written: logrus
		// allocates them even for an entry below the level.
		if log := logModule(c); log != nil && !log.Logger().IsLevelEnabled(level) {
			return
		}
		Logger(c).WithFields(logrus.Fields{
			"method":   c.Request.Method,
			"route":    route,
			"status":   status,
			"duration": elapsed.Round(time.Microsecond).String(),
			"bytes":    bodyBytes(c),
		}).Log(level, "request")
	}
}

// limitJSONBody caps JSON bodies; multipart routes set their own, larger limit.
func limitJSONBody(max int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		// Uploads (multipart forms, tus chunks) are limited by their routes.
		if max > 0 && c.Request.Body != nil && c.Request.Body != http.NoBody && !strings.HasPrefix(c.ContentType(), "multipart/") && c.ContentType() != "application/offset+octet-stream" {
			c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, max)
		}
		c.Next()
	}
}

// LimitBody replaces the body limit of a route (uploads).
func LimitBody(c *gin.Context, max int64) {
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, max)
}

// IsTooLarge tells whether err comes from a body over its limit.
func IsTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

func cors(origins []string) gin.HandlerFunc {
	allowed := map[string]bool{}
	for _, o := range origins {
		allowed[o] = true
	}
	return func(c *gin.Context) {
		origin := c.GetHeader("Origin")
		if origin == "" || (!allowed[origin] && !allowed["*"]) {
			c.Next()
			return
		}
		h := c.Writer.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", "X-Request-ID, X-API-Version, X-Total-Count, ETag, Content-Disposition, Retry-After, Idempotent-Replayed, "+
			"Location, Tus-Resumable, Tus-Version, Tus-Extension, Tus-Max-Size, Tus-Checksum-Algorithm, Upload-Offset, Upload-Length, Upload-Metadata, Upload-Expires, Upload-File-Id")
		if c.Request.Method == http.MethodOptions && c.GetHeader("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, If-None-Match, Range, X-Request-ID, Idempotency-Key, "+
				"Tus-Resumable, Upload-Length, Upload-Offset, Upload-Metadata, Upload-Checksum, Upload-Defer-Length")
			h.Set("Access-Control-Max-Age", "600")
			c.AbortWithStatus(http.StatusNoContent)
			return
		}
		c.Next()
	}
}

// Handler is a gin handler that returns its error instead of writing it.
type Handler func(c *gin.Context) error

// H adapts a Handler: a returned error goes to the error middleware.
func H(h Handler) gin.HandlerFunc {
	name := runtime.FuncForPC(reflect.ValueOf(h).Pointer()).Name()
	return func(c *gin.Context) {
		if _, ok := c.Get(describeKey); ok {
			c.Set(describeKey, name)
			return
		}
		if err := h(c); err != nil {
			apierr.Render(c, err)
		}
	}
}

// describeKey asks an H adapter for the name of the function it serves
// instead of serving (HandlerName); no request carries it.
const describeKey = "httpx.describe"

// HandlerName is the function that serves a route: gin names only the last
// handler of the chain, which for every route built with H is the adapter, so
// the adapter is asked for the function it wraps.
func HandlerName(r gin.RouteInfo) string {
	if !strings.Contains(r.Handler, "/platform/httpx.H.") {
		return r.Handler
	}
	c := &gin.Context{}
	c.Set(describeKey, true)
	r.HandlerFunc(c)
	if name, ok := c.Get(describeKey); ok {
		if s, ok := name.(string); ok {
			return s
		}
	}
	return r.Handler
}
