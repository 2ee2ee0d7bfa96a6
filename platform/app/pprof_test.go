package app_test

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
)

// TestPprof_200_OnItsOwnListenerOnly: with http.pprof_addr set the profiles
// answer there, and the API itself still answers 404 for their path.
func TestPprof_200_OnItsOwnListenerOnly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	s := testkit.NewServer(t, testkit.DB(t, testkit.SQLite), func(*app.Platform) []module.Module { return nil }, testkit.Options{
		NoValidate: true,
		Configure:  func(c *config.Config) { c.HTTP.PprofAddr = addr },
	})
	var res *http.Response
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		res, err = http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("pprof listener: %v", err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("pprof goroutine profile: status %d, want 200", res.StatusCode)
	}
	if got := s.Do(testkit.Request{Method: http.MethodGet, Path: "/debug/pprof/"}); got.Status != http.StatusNotFound {
		t.Fatalf("API GET /debug/pprof/: status %d, want 404", got.Status)
	}
}

// TestPprof_Off_ByDefault: without http.pprof_addr nothing listens for profiles.
func TestPprof_Off_ByDefault(t *testing.T) {
	if got := config.Default().HTTP.PprofAddr; got != "" {
		t.Fatalf("http.pprof_addr defaults to %q, want empty (off)", got)
	}
}
