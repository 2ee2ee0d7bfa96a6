package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agritrade/api/platform/testkit"
)

// binary is the agritrade binary built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agritrade-e2e")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "agritrade")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build agritrade:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// process is a running `agritrade serve`.
type process struct {
	cmd     *exec.Cmd
	base    string
	startup time.Duration
	out     *bytes.Buffer
}

var listening = regexp.MustCompile(`listening on (\S+)`)

func serve(t *testing.T, env ...string) *process {
	t.Helper()
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(), append([]string{"AGRITRADE_HTTP_ADDR=127.0.0.1:0", "AGRITRADE_LOG_FORMAT=json"}, env...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	cmd.Stderr = logs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, out: logs}
	t.Cleanup(func() { p.stop(t) })
	lines := bufio.NewScanner(stdout)
	found := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if m := listening.FindStringSubmatch(lines.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case addr := <-found:
		p.base = "http://" + addr
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not start; logs:\n%s", logs)
	}
	// Ready means /readyz answers 200, which is what an orchestrator waits for.
	for {
		if res, err := http.Get(p.base + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.startup = time.Since(start)
	return p
}

func (p *process) stop(t *testing.T) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve exited with %v after SIGTERM; logs:\n%s", err, p.out)
		}
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Errorf("serve did not stop within 30s of SIGTERM")
	}
}

func (p *process) call(t *testing.T, method, path, token, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, p.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

func mint(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"token"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestFreshInstallOnSQLite is what a new user does: serve with nothing set,
// read the versions and docs, mint a token and use the admin routes.
func TestFreshInstallOnSQLite(t *testing.T) {
	data := t.TempDir()
	env := []string{"AGRITRADE_DATA_DIR=" + data}
	p := serve(t, env...)
	t.Logf("start-up to ready on a fresh SQLite data dir: %s", p.startup)

	status, hdr, body := p.call(t, http.MethodGet, "/versions", "", "")
	var v map[string]string
	if err := json.Unmarshal(body, &v); err != nil || status != 200 || v["system"] != "1.0.0" || v["logistics"] != "1.0.0" || v["livestock"] != "1.0.0" || v["build"] == "" {
		t.Fatalf("/versions: %d %s", status, body)
	}
	if hdr.Get("X-Request-ID") == "" || hdr.Get("X-API-Version") != "platform/1.0.0" {
		t.Fatalf("platform headers %v", hdr)
	}
	status, hdr, body = p.call(t, http.MethodGet, "/docs", "", "")
	if status != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !bytes.Contains(body, []byte("AgriTrade API")) {
		t.Fatalf("/docs: %d %s", status, hdr)
	}
	for _, asset := range []string{"/docs/docs.js", "/docs/docs.css", "/openapi.json", "/system/v1/openapi.json", "/logistics/v1/openapi.json", "/livestock/v1/openapi.json"} {
		if status, _, _ := p.call(t, http.MethodGet, asset, "", ""); status != 200 {
			t.Fatalf("%s: %d", asset, status)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "agritrade.db")); err != nil {
		t.Fatalf("no SQLite database in the data dir: %v", err)
	}

	// The token command reads the secret that serve generated in the data dir.
	admin := mint(t, env, "--sub", "U1", "--name", "Ann Smith", "--org", "O1", "--org-name", "Smith Farms", "--orgs", "O1,O2", "--roles", "admin", "--ttl", "1h")
	for _, m := range []string{"system", "logistics", "livestock"} {
		status, hdr, body := p.call(t, http.MethodPut, "/"+m+"/v1/admin/settings", admin, `{"logging":{"level":"debug","filter":"files,loads:*,-loads:import"}}`)
		if status != 200 || hdr.Get("X-API-Version") != m+"/1.0.0" || !bytes.Contains(body, []byte(`"level":"debug"`)) || !bytes.Contains(body, []byte(`"status":"success"`)) {
			t.Fatalf("PUT %s settings: %d %s", m, status, body)
		}
	}
	expired := mint(t, env, "--sub", "U1", "--roles", "admin", "--ttl", "-1h")
	if status, hdr, _ := p.call(t, http.MethodGet, "/system/v1/admin/settings", expired, ""); status != 401 ||
		hdr.Get("WWW-Authenticate") != `Bearer realm="agritrade", error="invalid_token", error_description="the token has expired"` {
		t.Fatalf("expired token: %d %q", status, hdr.Get("WWW-Authenticate"))
	}
	if status, hdr, _ := p.call(t, http.MethodGet, "/metrics", "", ""); status != 401 || hdr.Get("WWW-Authenticate") != `Bearer realm="agritrade"` {
		t.Fatalf("/metrics without a token: %d %q", status, hdr.Get("WWW-Authenticate"))
	}
	status, _, body = p.call(t, http.MethodGet, "/metrics", admin, "")
	if status != 200 || !bytes.Contains(body, []byte("agritrade_http_requests_total")) {
		t.Fatalf("/metrics: %d", status)
	}

	// Settings persist across a restart.
	p.stop(t)
	p2 := serve(t, env...)
	_, _, body = p2.call(t, http.MethodGet, "/logistics/v1/admin/settings", admin, "")
	if !bytes.Contains(body, []byte(`"level":"debug"`)) || !bytes.Contains(body, []byte(`loads:*`)) {
		t.Fatalf("settings lost across restart: %s", body)
	}
	t.Logf("start-up to ready on an existing SQLite data dir: %s", p2.startup)
}

// TestLogSettingsReachEveryReplica runs two servers on one PostgreSQL
// database: a PUT on one must change the other's level within a second.
func TestLogSettingsReachEveryReplica(t *testing.T) {
	dsn := testkit.PostgresDSN(t)
	env := []string{"AGRITRADE_DB_DSN=" + dsn, "AGRITRADE_AUTH_SECRET=replica-secret", "AGRITRADE_DATA_DIR=" + t.TempDir()}
	a := serve(t, env...)
	b := serve(t, env...)
	admin := mint(t, env, "--sub", "ops", "--roles", "admin")
	if _, _, body := b.call(t, http.MethodGet, "/livestock/v1/admin/settings", admin, ""); !bytes.Contains(body, []byte(`"level":"info"`)) {
		t.Fatalf("replica b starts at %s", body)
	}
	start := time.Now()
	if status, _, body := a.call(t, http.MethodPut, "/livestock/v1/admin/settings", admin, `{"logging":{"level":"trace","filter":"listings:*"}}`); status != 200 {
		t.Fatalf("PUT on a: %d %s", status, body)
	}
	deadline := start.Add(time.Second)
	for {
		_, _, body := b.call(t, http.MethodGet, "/livestock/v1/admin/settings", admin, "")
		if bytes.Contains(body, []byte(`"level":"trace"`)) && bytes.Contains(body, []byte(`"filter":"listings:*"`)) {
			t.Logf("replica b followed replica a after %s", time.Since(start))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica b still answers %s one second after the PUT on a; its log:\n%s", body, b.out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Only that module changed on b.
	if _, _, body := b.call(t, http.MethodGet, "/system/v1/admin/settings", admin, ""); !bytes.Contains(body, []byte(`"level":"info"`)) {
		t.Fatalf("system module on b changed too: %s", body)
	}
}

// TestDemoFillsAnEmptyInstallation runs `agritrade demo` on a fresh data dir,
// then checks through a served API that every part of the sample is there.
func TestDemoFillsAnEmptyInstallation(t *testing.T) {
	data := t.TempDir()
	env := []string{"AGRITRADE_DATA_DIR=" + data}
	run := func() ([]byte, error) {
		cmd := exec.Command(binary, "demo")
		cmd.Env = append(os.Environ(), env...)
		return cmd.CombinedOutput()
	}
	out, err := run()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, want := range []string{"10 listings of 5 kinds", "2 upcoming, 1 in transit, 2 completed", "Fiona Hughes"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
	if out, err := run(); err == nil || !bytes.Contains(out, []byte("already has the demo sample")) {
		t.Fatalf("a second demo run was not refused: %v\n%s", err, out)
	}

	p := serve(t, env...)
	// The demo prints a listing tile: a signed thumbnail URL that works without a header.
	tile := regexp.MustCompile(`http://\S+/system/v1/files/\S+&thumb=300x300`).Find(out)
	if tile == nil {
		t.Fatalf("demo output lacks a thumbnail URL:\n%s", out)
	}
	u, err := url.Parse(string(tile))
	if err != nil {
		t.Fatal(err)
	}
	if status, hdr, body := p.call(t, http.MethodGet, u.RequestURI(), "", ""); status != 200 || hdr.Get("Content-Type") != "image/jpeg" || len(body) < 1000 {
		t.Fatalf("the demo's tile %s: %d %s (%d bytes)", tile, status, hdr.Get("Content-Type"), len(body))
	}
	farmer := mint(t, env, "--sub", "demo-farmer", "--org", "demo-org-hillfarm", "--orgs", "demo-org-hillfarm")
	driver := mint(t, env, "--sub", "demo-driver", "--org", "demo-org-haulage", "--roles", "driver")
	count := func(path, token string) int {
		t.Helper()
		status, hdr, body := p.call(t, http.MethodGet, path, token, "")
		if status != 200 {
			t.Fatalf("%s: %d %s", path, status, body)
		}
		var n int
		if _, err := fmt.Sscan(hdr.Get("X-Total-Count"), &n); err != nil {
			t.Fatalf("%s: X-Total-Count %q", path, hdr.Get("X-Total-Count"))
		}
		return n
	}
	if n := count("/logistics/v1/loads", farmer); n != 5 {
		t.Fatalf("the organiser sees %d loads, want 5", n)
	}
	if n := count("/logistics/v1/loads?f:status=completed", driver); n != 2 {
		t.Fatalf("the driver sees %d completed loads, want 2", n)
	}
	if n := count("/livestock/v1/listings", farmer); n != 8 {
		t.Fatalf("%d active listings, want 8 (10 less one sold and one draft)", n)
	}
	if n := count("/livestock/v1/listings?f:status=sold", farmer); n != 1 {
		t.Fatalf("%d sold listings, want 1", n)
	}
	if status, _, body := p.call(t, http.MethodGet, "/system/v1/conversations", farmer, ""); status != 200 || !bytes.Contains(body, []byte(`"totalDocs":2`)) {
		t.Fatalf("conversations: %d %s", status, body)
	}
	// The sample's objects have the ids the documents' examples cite
	// (demo_ids.go; clients/typescript/test/docs.test.ts sends every example).
	for path, want := range map[string]string{
		"/logistics/v1/loads/" + demoLoadPrefix + "101":                 `"reference":"HF-2026-101"`,
		"/livestock/v1/listings/" + demoListingPrefix + "001":           `Texel cross ewes`,
		"/system/v1/files/" + demoFileEwes + "/info":                    `texel-ewes.jpg`,
		"/system/v1/conversations/" + demoConversation:                  `Texel ewes`,
		"/system/v1/conversations/listing/" + demoListingPrefix + "001": demoListingConversation,
		"/system/v1/short-urls/" + demoShortCode:                        `"code":"HillFarm"`,
	} {
		if status, _, body := p.call(t, http.MethodGet, path, farmer, ""); status != 200 || !bytes.Contains(body, []byte(want)) {
			t.Fatalf("%s: %d %s, want %s", path, status, body, want)
		}
	}
	// The token printed for /docs is the farmer's with the admin role.
	if m := regexp.MustCompile(`with the admin role\n\s+(\S+)`).FindSubmatch(out); m == nil {
		t.Fatalf("demo output lacks the /docs token:\n%s", out)
	} else if status, _, body := p.call(t, http.MethodGet, "/system/v1/admin/settings", string(m[1]), ""); status != 200 {
		t.Fatalf("the /docs token on an admin route: %d %s", status, body)
	}
	// A second sample (--force) gets fresh ids and load references beside the first.
	again := exec.Command(binary, "demo", "--force")
	again.Env = append(os.Environ(), env...)
	if out, err := again.CombinedOutput(); err != nil {
		t.Fatalf("demo --force: %v\n%s", err, out)
	}
	if n := count("/livestock/v1/listings?f:status=sold", farmer); n != 2 {
		t.Fatalf("%d sold listings after a second sample, want 2", n)
	}
}
