package apierr

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/sirupsen/logrus"
)

// BodyKey is the gin context key under which JSON binding keeps the raw request
// body, so that validation errors can echo it.
const BodyKey = "apierr.body"

// Body is the error body of API.md.
type Body struct {
	Status     string          `json:"status"`
	Code       Code            `json:"code"`
	Message    string          `json:"message"`
	Validation []FieldError    `json:"validation"`
	Body       json.RawMessage `json:"body"`
	Stack      string          `json:"stack"`
}

// RenderOptions configures the error middleware.
type RenderOptions struct {
	// Debug puts stacks and causes into responses; never on in production.
	Debug bool
	// Logger returns the logger of the request (with its request id).
	Logger func(c *gin.Context) logrus.FieldLogger
	// Unavailable are the dependencies' classifiers: an error that is not an
	// *Error (or is an internal one) and that one of them recognises is
	// answered 503 unavailable with Retry-After instead of 500.
	Unavailable []Classifier
}

// Middleware renders the last error a handler attached with c.Error, and turns
// panics into 500s. It is the only place that writes error JSON.
func Middleware(opts RenderOptions) gin.HandlerFunc {
	if opts.Logger == nil {
		opts.Logger = func(*gin.Context) logrus.FieldLogger { return logrus.StandardLogger() }
	}
	// flush renders the pending error at once, for middleware that must see
	// the answer before it returns (RenderPending).
	flush := func(c *gin.Context) {
		if len(c.Errors) == 0 || c.GetBool(renderedKey) {
			return
		}
		c.Set(renderedKey, true)
		write(c, opts, c.Errors.Last().Err, "")
	}
	return func(c *gin.Context) {
		c.Set(flushKey, flush)
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler { //nolint:errorlint // sentinel compared as http does
					panic(r)
				}
				stack := string(debug.Stack())
				if p, ok := r.(interface{ PanicStack() []byte }); ok {
					stack = string(p.PanicStack()) // raised again away from where it happened (db.TxPanic)
				}
				opts.Logger(c).WithField("panic", fmt.Sprint(r)).WithField("stack", stack).Error("panic while handling request")
				write(c, opts, Internal(fmt.Errorf("panic: %v", r)), stack)
			}
		}()
		c.Next()
		if len(c.Errors) == 0 || c.GetBool(renderedKey) {
			return
		}
		write(c, opts, c.Errors.Last().Err, "")
	}
}

const (
	flushKey    = "apierr.flush"
	renderedKey = "apierr.rendered"
)

// RenderPending writes the error a handler attached with Render now instead
// of when the error middleware unwinds, so that a middleware between the two
// (platform/idempotency, which keeps answers) sees the whole answer when
// c.Next returns. The error middleware then writes nothing more.
func RenderPending(c *gin.Context) {
	if v, ok := c.Get(flushKey); ok {
		if f, ok := v.(func(*gin.Context)); ok {
			f(c)
		}
	}
}

// Render attaches err to the request so that the middleware renders it, and
// stops the handler chain.
func Render(c *gin.Context, err error) {
	_ = c.Error(err) // gin returns the same error, wrapped
	c.Abort()
}

func write(c *gin.Context, opts RenderOptions, err error, stack string) {
	e := Classify(err, opts.Unavailable)
	log := opts.Logger(c).WithField("code", e.Code).WithField("status", e.Status())
	switch {
	case e.Code == CodeUnavailable:
		// Expected while a dependency is down; its own alerts say so.
		log.WithError(err).Warn(e.Message)
	case e.Status() >= http.StatusInternalServerError:
		log.WithError(err).Error(e.Message)
	default:
		log.WithError(err).Debug(e.Message)
	}
	if c.Writer.Written() {
		// A streamed response already started; all that is left is to stop it.
		return
	}
	body := Body{Status: "error", Code: e.Code, Message: e.Message, Validation: e.Validation}
	if body.Validation == nil {
		body.Validation = []FieldError{}
	}
	if e.Code == CodeValidation {
		body.Body = echoedBody(c)
	}
	if opts.Debug {
		if stack == "" && e.Cause != nil {
			stack = fmt.Sprintf("%+v", e.Cause)
		}
		body.Stack = stack
	}
	if e.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if e.Status() == http.StatusUnauthorized {
		c.Header("WWW-Authenticate", Challenge(e.TokenProblem))
	}
	c.Header("Cache-Control", "no-store")
	c.AbortWithStatusJSON(e.Status(), body)
}

// Realm is the realm of the API's bearer challenge.
const Realm = "agritrade"

// Challenge is the WWW-Authenticate value of a 401 (RFC 6750): the bare
// Bearer challenge when no token was sent, with error="invalid_token" and the
// problem as error_description when one was.
func Challenge(problem string) string {
	h := `Bearer realm="` + Realm + `"`
	if problem == "" {
		return h
	}
	return h + `, error="invalid_token", error_description="` + quotable(problem) + `"`
}

// quotable keeps what RFC 6750 allows in error_description (printable ASCII
// without '"' and '\'), so that no reason can break the header.
func quotable(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x20 && c <= 0x7e && c != '"' && c != '\\' {
			b = append(b, c)
		}
	}
	return string(b)
}

// echoedBody returns the JSON request body as an object: arrays are wrapped as
// {"items": [...]} so that the field is always an object.
func echoedBody(c *gin.Context) json.RawMessage {
	raw, ok := c.Get(BodyKey)
	if !ok {
		return nil
	}
	b, _ := raw.([]byte)
	// A body that is not UTF-8 would make the answer invalid JSON text.
	if len(b) == 0 || !utf8.Valid(b) || !json.Valid(b) {
		return nil
	}
	for _, ch := range b {
		switch ch {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return b
		case '[':
			wrapped, err := json.Marshal(map[string]json.RawMessage{"items": b})
			if err != nil {
				return nil
			}
			return wrapped
		}
		break
	}
	return nil
}
