package app

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/cache"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/module"
	"github.com/gin-gonic/gin"
)

// Version is the platform's own version, shown on the platform routes.
const Version = "1.0.0"

//go:embed openapi.yaml
var platformOpenAPI []byte

//go:embed docs
var docsFS embed.FS

// Checker reports whether a dependency answers, for /readyz.
type Checker struct {
	Name  string
	Check func(ctx context.Context) error
}

// Server is the composed HTTP application.
type Server struct {
	P        *Platform
	Modules  []module.Module
	Engine   *gin.Engine
	Build    string
	checkers []Checker
	docs     *docSet
	probe    *readiness
}

// NewServer mounts the platform routes and every module's routes.
func NewServer(p *Platform, build string, mods ...module.Module) (*Server, error) {
	s := &Server{P: p, Modules: mods, Build: build, docs: newDocSet()}
	s.Engine = httpx.NewEngine(httpx.Options{
		Debug:        p.Config.Debug,
		MaxBodyBytes: p.Config.HTTP.MaxBodyKB * 1024,
		Log:          p.Log,
		Version:      PlatformName + "/" + Version,
		Metrics:      p.Metrics,
		CORSOrigins:  p.Config.HTTP.CORSOrigins,
		Unavailable:  Classifiers(),
		Tracing:      p.Tracing.Gin(),
	})
	registerBuildInfo(p, build, mods)
	s.probe = newReadiness(p.Metrics.Registry)
	s.Engine.Use(p.Auth.Middleware())
	// Right after the token is read, so that it covers every authenticated
	// write of every module in one place (the scope is the token's sub).
	s.Engine.Use(p.Idempotency.Middleware())
	s.checkers = append(s.checkers, Checker{Name: "database", Check: func(ctx context.Context) error { return p.DB.PingContext(ctx) }})
	if p.Files != nil {
		s.checkers = append(s.checkers, Checker{Name: "files", Check: p.Files.Ping})
	}
	if p.Redis != nil {
		s.checkers = append(s.checkers, Checker{Name: "redis", Check: func(ctx context.Context) error { return p.Redis.Ping(ctx).Err() }})
	}
	if err := s.mountDocs(); err != nil {
		return nil, err
	}
	s.mountPlatform()
	for _, m := range mods {
		s.mountModule(m)
	}
	// Decoding the YAML documents is the slowest part of start-up and nothing
	// but the document routes needs it, so it runs beside the server.
	go s.docs.build(platformOpenAPI, mods, build)
	return s, nil
}

func (s *Server) mountModule(m module.Module) {
	major := "v" + strings.SplitN(m.Version(), ".", 2)[0]
	log := s.P.Logs.Module(m.Name())
	g := s.Engine.Group("/"+m.Name()+"/"+major, httpx.Scope(log, m.Version()))
	name := m.Name()
	g.GET("/openapi.json", httpx.H(func(c *gin.Context) error { return s.docs.serve(c, name) }))
	s.P.Settings.Mount(g, m.Name())
	m.Mount(module.Routes{API: g, Root: s.Engine})
}

func (s *Server) mountPlatform() {
	e := s.Engine
	e.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	e.GET("/readyz", s.ready)
	e.GET("/versions", func(c *gin.Context) {
		v := gin.H{"build": s.Build}
		for _, m := range s.Modules {
			v[m.Name()] = m.Version()
		}
		c.JSON(http.StatusOK, v)
	})
	e.GET("/metrics", auth.RequireRole(auth.RoleAdmin), s.P.Metrics.Handler())
	e.GET("/openapi.json", httpx.H(func(c *gin.Context) error { return s.docs.serve(c, "") }))
}

// Classifiers are the dependencies' tests of "down, retry later" that the
// error middleware applies to every error a handler returns (503 instead of
// 500). The database comes first: its test also claims bare transport
// failures (refused, reset, EOF), and those that reach a handler unwrapped
// come from database queries, as bun hands the driver's errors back as they
// are; the file store wraps its own failures where they happen
// (apierr.Unavailable "the file store"), and the cache's are bypassed or
// wrapped by their callers. The other two then recognise their own error
// types (S3 answers, Redis replies) wherever those turn up.
func Classifiers() []apierr.Classifier {
	return []apierr.Classifier{
		{Dependency: "the database", Is: db.IsUnavailable},
		{Dependency: "the file store", Is: filestore.IsUnavailable},
		{Dependency: "the cache", Is: cache.IsUnavailable},
	}
}

// readyCheckTimeout bounds each readiness check: the probe answers within it
// even when a dependency hangs instead of refusing.
const readyCheckTimeout = 2 * time.Second

func (s *Server) ready(c *gin.Context) {
	results := make([]error, len(s.checkers))
	var wg sync.WaitGroup
	for i, ch := range s.checkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(c.Request.Context(), readyCheckTimeout)
			defer cancel()
			results[i] = ch.Check(ctx)
		}()
	}
	wg.Wait()
	status := gin.H{}
	var failed []string
	for i, ch := range s.checkers {
		if err := results[i]; err != nil {
			httpx.Logger(c).WithError(err).WithField("dependency", ch.Name).Warn("readiness check failed")
			status[ch.Name] = "down"
			failed = append(failed, ch.Name)
			continue
		}
		status[ch.Name] = "ok"
	}
	s.probe.observe(len(failed) == 0)
	if len(failed) > 0 {
		apierr.Render(c, &apierr.Error{Code: apierr.CodeUnavailable, Message: strings.Join(failed, ", ") + " not ready", RetryAfter: 5})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ok", "checks": status})
}

func (s *Server) mountDocs() error {
	sub, err := fs.Sub(docsFS, "docs")
	if err != nil {
		return err
	}
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		return err
	}
	serveIndex := func(c *gin.Context) { c.Data(http.StatusOK, "text/html; charset=utf-8", index) }
	s.Engine.GET("/docs", docsSecurity, serveIndex)
	s.Engine.GET("/docs/*asset", docsSecurity, func(c *gin.Context) {
		name := strings.TrimPrefix(c.Param("asset"), "/")
		if name == "" || name == "index.html" {
			serveIndex(c)
			return
		}
		// A name the page does not have answers the error body, not the
		// file server's plain-text 404.
		if st, err := fs.Stat(sub, name); err != nil || st.IsDir() {
			apierr.Render(c, apierr.NotFound("docs asset"))
			return
		}
		c.FileFromFS(name, http.FS(sub))
	})
	return nil
}

// docsSecurity keeps the docs page to its own origin: it has no inline code, and
// everything it shows from the document is inserted as text.
func docsSecurity(c *gin.Context) {
	c.Header("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Next()
}

// Start writes nothing (Platform.MigrateUp migrated and seeded, under the
// migration lock): it loads stored settings and starts background work (bus,
// settings resync, outbox dispatcher, upload sweeper, module runners), waiting up to
// busReadyWait for the bus to receive. Background errors are logged; cancel
// ctx to stop them, then Wait.
func (s *Server) Start(ctx context.Context, wg *sync.WaitGroup) error {
	if err := s.P.Settings.Load(ctx); err != nil {
		return err
	}
	s.goRun(ctx, wg, "bus", s.P.Bus.Run)
	// A replica that serves before its bus subscription is live misses the
	// broadcasts sent meanwhile (log settings, cache clears) until the next
	// resync: give the subscription a moment, but never hold the start on it.
	busCtx, cancel := context.WithTimeout(ctx, busReadyWait)
	if err := s.P.Bus.Ready(busCtx); err != nil && ctx.Err() == nil {
		s.P.Log.Component("bus").WithError(err).Warn("the bus is not receiving yet; starting anyway (missed broadcasts are caught up by the resync)")
	}
	cancel()
	s.goRun(ctx, wg, "settings", func(ctx context.Context) error { return s.P.Settings.Run(ctx, time.Minute) })
	s.goRun(ctx, wg, "outbox", s.P.Outbox.Run)
	s.goRun(ctx, wg, "events", s.P.Events.Run)
	// Deletes the kept answers older than idempotency.ttl.
	s.goRun(ctx, wg, "idempotency", s.P.Idempotency.Run)
	if addr := s.P.Config.HTTP.PprofAddr; addr != "" {
		s.P.Log.Component("runner").WithField("addr", addr).Warn("runtime profiles served on http.pprof_addr (/debug/pprof/)")
		s.goRun(ctx, wg, "pprof", func(ctx context.Context) error { return servePprof(ctx, addr) })
	}
	if s.P.Files != nil {
		// Removes the bytes of uploads abandoned half-way (files.sweep_interval).
		s.goRun(ctx, wg, "files", s.P.Files.RunSweeper)
	}
	for _, m := range s.Modules {
		if r, ok := m.(module.Runner); ok {
			s.goRun(ctx, wg, m.Name(), r.Run)
		}
	}
	return nil
}

// busReadyWait bounds how long Start waits for the bus subscription.
const busReadyWait = 5 * time.Second

// goRun runs fn until ctx ends, restarting it after an error with a pause, so a
// dropped connection does not end background work for good.
func (s *Server) goRun(ctx context.Context, wg *sync.WaitGroup, name string, fn func(context.Context) error) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			err := fn(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.P.Log.Component("runner").WithError(err).WithField("runner", name).Warn("background work stopped; restarting")
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
		}
	}()
}

// Serve listens on addr until ctx ends, then shuts down gracefully: it stops
// accepting, lets in-flight requests finish within the timeout, and returns.
// ready, when set, receives the bound address once the listener is up.
func (s *Server) Serve(ctx context.Context, addr string, ready func(net.Addr)) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	srv := newHTTPServer(s.P.Config.HTTP, s.Engine)
	srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	ln = limitListener(ln, s.P.Config.HTTP.MaxConns)
	// Event streams never finish by themselves: shutdown ends them (clients
	// reconnect elsewhere with Last-Event-ID) so that it is not held up.
	srv.RegisterOnShutdown(s.P.Events.Close)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	timeout := s.P.Config.HTTP.ShutdownTimeout
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("graceful shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// DocsReady waits until the OpenAPI documents are built; an error means a
// module's document is broken or clashes with another's.
func (s *Server) DocsReady() error { return s.docs.Wait() }
