package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/telemetry"
	"github.com/uptrace/bun"
)

// Secret is the HS256 secret of test servers.
const Secret = "testkit-secret-not-for-production"

// Server is the real application over a test database, driven in process.
type Server struct {
	T        testing.TB
	Platform *app.Platform
	App      *app.Server
	Config   *config.Config
	Logs     *bytes.Buffer
	spec     *Spec
}

// Options adjust a test server.
type Options struct {
	// Configure changes the configuration before the platform opens.
	Configure func(c *config.Config)
	// NoValidate turns off OpenAPI validation of responses (raw protocol tests).
	NoValidate bool
	// Tracing, when set, replaces the tracing otel.* would open (tests record
	// spans in memory through it).
	Tracing *telemetry.Tracing
}

// NewServer builds the platform over bdb, the modules from build, migrates,
// seeds and starts background work; everything stops when the test ends.
func NewServer(t testing.TB, bdb *bun.DB, build func(p *app.Platform) []module.Module, opts ...Options) *Server {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Auth.Secret = Secret
	cfg.BaseURL = "http://api.test"
	cfg.Log.Level = "debug"
	cfg.Bus.Backend = "memory"
	if o.Configure != nil {
		o.Configure(cfg)
	}
	if cfg.Redis.Prefix == "" {
		// Servers over one database are replicas of one deployment: they share
		// a Redis namespace, and no other test run (on a shared Redis) does.
		p, _ := redisPrefixes.LoadOrStore(bdb, UniqueName("agritrade-test:")+":")
		cfg.Redis.Prefix = p.(string)
	}
	logs := &bytes.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	p, err := app.Open(ctx, cfg, app.Options{DB: bdb, LogOutput: &lockedWriter{w: logs}, Tracing: o.Tracing})
	if err != nil {
		cancel()
		t.Fatalf("open platform: %v", err)
	}
	mods := build(p)
	if err := p.MigrateUp(ctx, mods); err != nil {
		cancel()
		t.Fatalf("migrate: %v", err)
	}
	srv, err := app.NewServer(p, "test", mods...)
	if err != nil {
		cancel()
		t.Fatalf("build server: %v", err)
	}
	var wg sync.WaitGroup
	if err := srv.Start(ctx, &wg); err != nil {
		cancel()
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = p.Close()
	})
	s := &Server{T: t, Platform: p, App: srv, Config: cfg, Logs: logs}
	if !o.NoValidate {
		s.spec = LoadSpec(t, srv)
	}
	return s
}

// redisPrefixes holds the redis.prefix of each test database.
var redisPrefixes sync.Map

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Token mints a valid token for a principal.
func (s *Server) Token(p auth.Principal) string {
	return MintToken(s.T, p, time.Hour)
}

// MintToken signs a token with the test secret.
func MintToken(t testing.TB, p auth.Principal, ttl time.Duration) string {
	t.Helper()
	tok, err := auth.Mint([]byte(Secret), auth.MintOptions{Principal: p, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Request is one HTTP call.
type Request struct {
	Method string
	Path   string
	Token  string
	// JSON is marshalled as the body unless it is a string or []byte, which go as they are.
	JSON        any
	Body        io.Reader
	ContentType string
	Header      map[string]string
}

// Response is what came back.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends the request through the real engine and validates the response
// against the OpenAPI documents.
func (s *Server) Do(r Request) *Response {
	s.T.Helper()
	req := s.NewRequest(r)
	rec := httptest.NewRecorder()
	s.App.Engine.ServeHTTP(rec, req)
	res := &Response{Status: rec.Code, Header: rec.Result().Header, Body: rec.Body.Bytes()}
	if s.spec != nil {
		s.spec.ValidateResponse(s.T, s.NewRequest(r), res)
	}
	return res
}

// NewRequest builds the *http.Request of r.
func (s *Server) NewRequest(r Request) *http.Request {
	s.T.Helper()
	body := r.Body
	ct := r.ContentType
	switch v := r.JSON.(type) {
	case nil:
	case string:
		body = strings.NewReader(v)
	case []byte:
		body = bytes.NewReader(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			s.T.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	if r.JSON != nil && ct == "" {
		ct = "application/json"
	}
	if body != nil {
		if rs, ok := body.(io.Seeker); ok {
			_, _ = rs.Seek(0, io.SeekStart)
		}
	}
	req := httptest.NewRequest(r.Method, r.Path, body)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	return req
}

// Decode unmarshals the body into v, failing the test on error.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Map decodes a JSON object body.
func (r *Response) Map(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.Decode(t, &m)
	return m
}

// ErrorBody is the decoded error body.
type ErrorBody struct {
	Status     string `json:"status"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	Validation []struct {
		Path    string         `json:"path"`
		Message string         `json:"message"`
		Code    string         `json:"code"`
		Data    map[string]any `json:"data"`
	} `json:"validation"`
	Body  json.RawMessage `json:"body"`
	Stack string          `json:"stack"`
}

// Error decodes the error body.
func (r *Response) Error(t testing.TB) ErrorBody {
	t.Helper()
	var e ErrorBody
	r.Decode(t, &e)
	return e
}

// Paths lists the validation paths of an error body.
func (e ErrorBody) Paths() []string {
	out := make([]string, len(e.Validation))
	for i, v := range e.Validation {
		out[i] = v.Path
	}
	return out
}

// Scenario is one row of an HTTP scenario table.
type Scenario struct {
	Name   string
	Req    Request
	Status int
	// Code, when set, is the expected error code.
	Code string
	// Check runs further assertions on the response.
	Check func(t *testing.T, r *Response)
}

// Run plays the scenarios as subtests, asserting status, code and checks.
func (s *Server) Run(t *testing.T, scenarios []Scenario) {
	t.Helper()
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			r := s.Do(sc.Req)
			if r.Status != sc.Status {
				t.Fatalf("%s %s: status %d, want %d; body %s", sc.Req.Method, sc.Req.Path, r.Status, sc.Status, r.Body)
			}
			if sc.Code != "" {
				if got := r.Error(t).Code; got != sc.Code {
					t.Fatalf("code %q, want %q; body %s", got, sc.Code, r.Body)
				}
			}
			if sc.Check != nil {
				sc.Check(t, r)
			}
		})
	}
}
