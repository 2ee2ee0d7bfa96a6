package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agritrade/api/platform/outbox/outboxtest"
)

// TestDatabaseOutageAnswers503 runs two replicas (PostgreSQL bus, webhook
// notifications) on a PostgreSQL cluster the test starts itself, sweeps every
// route of the engine with valid requests through both replicas without
// pause, and meanwhile stops the cluster (a fast shutdown, then a crash),
// restarting it each time. Every answer is counted: no 5xx but 503, every 503
// with Retry-After, no dropped connection; after each restart every route
// answers its success status again without restarting the replicas, and the
// background work (bus listener, outbox dispatcher) resumes.
func TestDatabaseOutageAnswers503(t *testing.T) {
	pg := startCluster(t)
	dsn := pg.CreateDatabase("agritrade_outage")
	recv := outboxtest.NewReceiver(t, "outage-webhook-secret")
	env := []string{
		"AGRITRADE_DB_DSN=" + dsn, "AGRITRADE_DATA_DIR=" + t.TempDir(), "AGRITRADE_AUTH_SECRET=" + faultSecret,
		"AGRITRADE_BUS_BACKEND=postgres", "AGRITRADE_RATELIMIT_PER_MINUTE=0", "AGRITRADE_LOG_LEVEL=error",
		"AGRITRADE_BASE_URL=https://agritrade.example", "AGRITRADE_SHORTLINKS_ALLOWED_HOSTS=agritrade.example",
		"AGRITRADE_NOTIFY_WEBHOOK_URL=" + recv.URL, "AGRITRADE_NOTIFY_WEBHOOK_SECRET=outage-webhook-secret",
		"AGRITRADE_NOTIFY_POLL_INTERVAL=200ms", "AGRITRADE_NOTIFY_BACKOFF_BASE=200ms", "AGRITRADE_NOTIFY_BACKOFF_MAX=1s",
	}
	replicas := []*child{spawn(t, "replica a", env, "serve"), spawn(t, "replica b", env, "serve")}
	for _, r := range replicas {
		if _, err := r.ready(2 * time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	routes := engineRoutes(t)
	fx := newFixtures(t, replicas[0].base)
	tl := &tally{counts: map[string]map[string]map[int]int{}, seen: map[string]bool{}}

	// Sweepers: two per replica, each going through every route in a loop.
	var phase atomic.Value
	phase.Store("1 before")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sweepers []*sweeper
	for i := range 4 {
		s := &sweeper{t: t, id: i, base: replicas[i%2].base, fx: fx, tl: tl, phase: &phase, passes: make(chan bool, 1000)}
		sweepers = append(sweepers, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				s.passes <- s.pass(n)
			}
		}()
	}
	// recovered waits until every sweeper has finished one pass begun after
	// now in which every route answered its success status.
	recovered := func(what string, within time.Duration) time.Duration {
		t.Helper()
		begun := time.Now()
		for _, s := range sweepers {
			for len(s.passes) > 0 {
				<-s.passes // passes that began before now
			}
		}
		for _, s := range sweepers {
			<-s.passes // may have begun before now
			for {
				select {
				case ok := <-s.passes:
					if ok {
						goto next
					}
				case <-time.After(within):
					t.Fatalf("%s: sweeper %d found routes still failing after %v: %v", what, s.id, within, s.lastFailures())
				}
			}
		next:
		}
		return time.Since(begun)
	}

	recovered("before the outage", 30*time.Second)
	for _, o := range []struct {
		name string
		sig  syscall.Signal
	}{{"fast shutdown", syscall.SIGINT}, {"crash (immediate shutdown)", syscall.SIGQUIT}} {
		phase.Store(fmt.Sprintf("%d stopping: %s", tl.nextPhase(), o.name))
		pg.Stop(o.sig) // returns once the server has exited
		phase.Store(fmt.Sprintf("%d outage: %s", tl.nextPhase(), o.name))
		time.Sleep(8 * time.Second)
		phase.Store(fmt.Sprintf("%d starting after %s", tl.nextPhase(), o.name))
		pg.Start() // returns once the server accepts connections
		phase.Store(fmt.Sprintf("%d restarted after %s", tl.nextPhase(), o.name))
		took := recovered("after the "+o.name, 90*time.Second)
		t.Logf("after the %s every route answered its success status again within %v of the restart", o.name, took.Round(time.Millisecond))
	}
	close(stop)
	wg.Wait()

	// The background work resumed: a log setting changed on one replica
	// reaches the other through the PostgreSQL bus's listener, and a new
	// conversation's notification leaves through the outbox dispatcher.
	admin := faultToken(t, demoAdmin)
	client := &http.Client{Timeout: 10 * time.Second}
	if st, _, body, err := do(context.Background(), client, http.MethodPut, replicas[0].base+"/livestock/v1/admin/settings", admin, "application/json",
		[]byte(`{"logging":{"level":"error","filter":"listings:*"}}`)); err != nil || st != 200 {
		t.Fatalf("PUT settings after the outages: %d %s %v", st, body, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, _, body, _ := do(context.Background(), client, http.MethodGet, replicas[1].base+"/livestock/v1/admin/settings", admin, "", nil)
		if bytes.Contains(body, []byte(`"filter":"listings:*"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other replica's bus listener did not come back after the outages: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := len(recv.Accepted())
	if st, _, body, err := do(context.Background(), client, http.MethodPost, replicas[1].base+"/system/v1/conversations", faultToken(t, demoBuyer), "application/json",
		jsonBody(t, map[string]any{"to": demoFarmer.UserID, "message": "after the outages"})); err != nil || st != 200 {
		t.Fatalf("conversation after the outages: %d %s %v", st, body, err)
	}
	recv.WaitAccepted(t, before+1, 30*time.Second)

	// The verdict.
	t.Log(tl.table())
	if len(tl.bad) > 0 {
		for _, r := range replicas {
			for _, line := range strings.Split(r.logs.String(), "\n") {
				if strings.Contains(line, `"level":"error"`) {
					t.Logf("%s: %.1500s", r.name, line)
				}
			}
		}
		t.Errorf("%d answers were 5xx other than 503, e.g.:\n  %s", len(tl.bad), strings.Join(first(tl.bad, 20), "\n  "))
	}
	if len(tl.noRetryAfter) > 0 {
		t.Errorf("%d answers 503 without Retry-After, e.g.:\n  %s", len(tl.noRetryAfter), strings.Join(first(tl.noRetryAfter, 20), "\n  "))
	}
	if len(tl.transport) > 0 {
		t.Errorf("%d requests got no answer, e.g.:\n  %s", len(tl.transport), strings.Join(first(tl.transport, 20), "\n  "))
	}
	if tl.total503 == 0 {
		t.Error("no 503 at all: the outage was not seen")
	}
	var missing []string
	for _, r := range routes {
		if !tl.seen[r.Method+" "+r.Path] {
			missing = append(missing, r.Method+" "+r.Path)
		}
	}
	if len(missing) > 0 {
		t.Errorf("routes of the engine the sweep has no request for (add them to sweeper.pass): %s", strings.Join(missing, ", "))
	}
	t.Logf("%d routes swept by %d sweepers over 2 replicas", len(routes), len(sweepers))
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// tally counts answers per phase (the phase in which the request was sent:
// a request sent just before a stop is answered during it), route group and
// status.
type tally struct {
	mu           sync.Mutex
	counts       map[string]map[string]map[int]int // phase → group → status → n
	seen         map[string]bool                   // "METHOD /pattern" answered during an outage
	bad          []string
	odd          []string               // 503s outside the outages, for the log
	byRoute      map[string]map[int]int // during the outages: "METHOD /pattern" → status → n
	noRetryAfter []string
	transport    []string
	total503     int
	phases       int
}

func (tl *tally) nextPhase() int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.phases++
	return tl.phases + 1
}

func group(pattern string) string {
	parts := strings.SplitN(strings.TrimPrefix(pattern, "/"), "/", 2)
	switch parts[0] {
	case "system", "logistics", "livestock":
		return parts[0]
	case "s":
		return "system"
	}
	return "platform"
}

func (tl *tally) record(phase, method, pattern string, status int, hdr http.Header, err error, body []byte) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	what := method + " " + pattern
	if strings.Contains(phase, "outage") {
		tl.seen[what] = true
		if tl.byRoute == nil {
			tl.byRoute = map[string]map[int]int{}
		}
		if tl.byRoute[what] == nil {
			tl.byRoute[what] = map[int]int{}
		}
		tl.byRoute[what][status]++
	}
	if err != nil {
		tl.transport = append(tl.transport, fmt.Sprintf("[%s] %s: %v", phase, what, err))
		return
	}
	g := group(pattern)
	if tl.counts[phase] == nil {
		tl.counts[phase] = map[string]map[int]int{}
	}
	if tl.counts[phase][g] == nil {
		tl.counts[phase][g] = map[int]int{}
	}
	tl.counts[phase][g][status]++
	switch {
	case status == http.StatusServiceUnavailable:
		tl.total503++
		if hdr.Get("Retry-After") == "" {
			tl.noRetryAfter = append(tl.noRetryAfter, fmt.Sprintf("[%s] %s", phase, what))
		}
		if !strings.Contains(phase, "outage") {
			tl.odd = append(tl.odd, fmt.Sprintf("[%s] %s: %.200s", phase, what, body))
		}
	case status >= 500:
		tl.bad = append(tl.bad, fmt.Sprintf("[%s] %s: %d %.300s", phase, what, status, body))
	}
}

func (tl *tally) table() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var phases []string
	for p := range tl.counts {
		phases = append(phases, p)
	}
	sort.Strings(phases)
	var b strings.Builder
	b.WriteString("answers by phase and route group (status: count):\n")
	for _, p := range phases {
		fmt.Fprintf(&b, "  %s\n", p)
		for _, g := range []string{"platform", "system", "logistics", "livestock"} {
			byStatus := tl.counts[p][g]
			var statuses []int
			for s := range byStatus {
				statuses = append(statuses, s)
			}
			sort.Ints(statuses)
			var cells []string
			for _, s := range statuses {
				cells = append(cells, fmt.Sprintf("%d: %d", s, byStatus[s]))
			}
			fmt.Fprintf(&b, "    %-10s %s\n", g, strings.Join(cells, ", "))
		}
	}
	b.WriteString("routes that answered other than 503 while the database was down (after its exit, before its restart; status: count):\n")
	var routes []string
	for r := range tl.byRoute {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	for _, r := range routes {
		var cells []string
		for st, n := range tl.byRoute[r] {
			if st != http.StatusServiceUnavailable {
				cells = append(cells, fmt.Sprintf("%d: %d", st, n))
			}
		}
		if len(cells) > 0 {
			sort.Strings(cells)
			fmt.Fprintf(&b, "    %-55s %s\n", r, strings.Join(cells, ", "))
		}
	}
	if len(tl.odd) > 0 {
		fmt.Fprintf(&b, "503s around the outages (%d), e.g.:\n    %s\n", len(tl.odd), strings.Join(first(tl.odd, 10), "\n    "))
	}
	return b.String()
}

// fixtures are objects made before the outage that read-only requests use,
// and that requests whose own object could not be made fall back on.
type fixtures struct {
	farmer, buyer, haulier, driver, admin string
	listing, load, file, conversation     string
	code                                  string
}

func newFixtures(t *testing.T, base string) *fixtures {
	t.Helper()
	fx := &fixtures{farmer: faultToken(t, demoFarmer), buyer: faultToken(t, demoBuyer), haulier: faultToken(t, demoHaul),
		driver: faultToken(t, demoDriver), admin: faultToken(t, demoAdmin)}
	s := &sweeper{t: t, base: base, fx: fx, tl: &tally{counts: map[string]map[string]map[int]int{}, seen: map[string]bool{}}, phase: &atomic.Value{}}
	s.phase.Store("fixtures")
	fx.listing = s.created(s.post("/livestock/v1/listings/sheep", "/livestock/v1/listings/sheep", fx.farmer, s.listing(0)))
	fx.load = s.created(s.post("/logistics/v1/loads", "/logistics/v1/loads", fx.farmer, jsonPayload(t, loadBodyMap("FIX-1", 3))))
	fx.file = s.created(s.upload(fx.farmer))
	conv := s.post("/system/v1/conversations", "/system/v1/conversations", fx.buyer, jsonPayload(t, map[string]any{
		"to": demoFarmer.UserID, "message": "Is this lot still available?", "listingId": fx.listing, "listingType": "livestock"}))
	fx.conversation = field(conv, "conversationId")
	fx.code = field(s.post("/system/v1/short-urls", "/system/v1/short-urls", "", jsonPayload(t, map[string]any{"template": "default", "url": "https://agritrade.example/fixture"})), "code")
	if fx.listing == "" || fx.load == "" || fx.file == "" || fx.conversation == "" || fx.code == "" {
		t.Fatalf("fixtures not made: %+v; %v", fx, s.lastFailures())
	}
	return fx
}

func field(body []byte, name string) string {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	s, _ := m[name].(string)
	return s
}

// payload is a request body and its content type.
type payload struct {
	ctype string
	body  []byte
}

func jsonPayload(t testing.TB, v any) payload { return payload{"application/json", jsonBody(t, v)} }

// sweeper sends every route's request in turn to one replica.
type sweeper struct {
	t        *testing.T
	id       int
	base     string
	fx       *fixtures
	tl       *tally
	phase    *atomic.Value
	passes   chan bool
	mu       sync.Mutex
	failures []string // the steps of the last pass that did not succeed
	client   *http.Client
	ok       bool
}

// missing is an id nothing has: the fallback of a step whose own object
// could not be made (its request still reaches the database).
const missing = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"

func or(id string) string {
	if id == "" {
		return missing
	}
	return id
}

func (s *sweeper) lastFailures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.failures...)
}

// send makes one request of a route and records the answer; it answers the
// body when the status is the route's success status (want), else nil.
func (s *sweeper) send(method, pattern, path, token string, p payload, want int) []byte {
	if s.client == nil {
		s.client = &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	phase, _ := s.phase.Load().(string)
	status, hdr, body, err := do(context.Background(), s.client, method, s.base+path, token, p.ctype, p.body)
	s.tl.record(phase, method, pattern, status, hdr, err, body)
	if err == nil && status == want {
		return body
	}
	s.ok = false
	s.mu.Lock()
	s.failures = append(s.failures, fmt.Sprintf("%s %s: %d %v %.200s", method, path, status, err, body))
	s.mu.Unlock()
	return nil
}

// tus sends one tus request (Tus-Resumable and the headers given, a chunk
// body when there is one) and answers the response headers.
func (s *sweeper) tus(method, pattern, path, token string, hdr map[string]string, chunk []byte, want int) http.Header {
	phase, _ := s.phase.Load().(string)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, s.base+path, bytes.NewReader(chunk))
	req.Header.Set("Tus-Resumable", "1.0.0")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if chunk != nil {
		req.Header.Set("Content-Type", "application/offset+octet-stream")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	status, rh, body := 0, http.Header{}, []byte(nil)
	res, err := http.DefaultClient.Do(req)
	if err == nil {
		status, rh = res.StatusCode, res.Header
		body, _ = io.ReadAll(res.Body)
		_ = res.Body.Close()
	}
	s.tl.record(phase, method, pattern, status, rh, err, body)
	if err != nil || status != want {
		s.ok = false
		s.mu.Lock()
		s.failures = append(s.failures, fmt.Sprintf("%s %s: %d %v %.200s", method, path, status, err, body))
		s.mu.Unlock()
		return http.Header{}
	}
	return rh
}

// locationPath is the path of a tus Location (absolute, on the public base
// URL); a placeholder when the creation failed.
func locationPath(h http.Header) string {
	u, err := url.Parse(h.Get("Location"))
	if err != nil || u.Path == "" {
		return "/system/v1/uploads/none"
	}
	return u.Path
}

func (s *sweeper) get(pattern, path, token string) []byte {
	return s.send(http.MethodGet, pattern, path, token, payload{}, http.StatusOK)
}

// stream opens an event stream with Last-Event-ID 0 (its replay reads the
// database, so an outage answers 503), takes its status and first lines, and
// hangs up: the stream itself never ends.
func (s *sweeper) stream(pattern, path, token string) {
	phase, _ := s.phase.Load().(string)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Last-Event-ID", "0")
	status, hdr, body := 0, http.Header(nil), []byte(nil)
	res, err := http.DefaultClient.Do(req)
	if err == nil {
		status, hdr = res.StatusCode, res.Header
		buf := make([]byte, 256)
		n, _ := res.Body.Read(buf)
		body = buf[:n]
		_ = res.Body.Close()
	}
	s.tl.record(phase, http.MethodGet, pattern, status, hdr, err, body)
	if err != nil || status != http.StatusOK {
		s.ok = false
		s.mu.Lock()
		s.failures = append(s.failures, fmt.Sprintf("GET %s: %d %v %.200s", path, status, err, body))
		s.mu.Unlock()
	}
}

func (s *sweeper) post(pattern, path, token string, p payload) []byte {
	return s.send(http.MethodPost, pattern, path, token, p, http.StatusOK)
}

func (s *sweeper) created(body []byte) string { return field(body, "id") }

func (s *sweeper) listing(i int) payload {
	_, body := listingBody(s.t, i, fmt.Sprintf("Outage sweep listing %d of sweeper %d", i, s.id))
	return payload{"application/json", body}
}

func (s *sweeper) upload(token string) []byte {
	body, ctype, _ := upload(s.t, demoFarmer, s.id*1000003+int(time.Now().UnixNano()%1000003))
	return s.post("/system/v1/files", "/system/v1/files", token, payload{ctype, body})
}

func multipartFile(t testing.TB, fields map[string]string, name string, content []byte) payload {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		if err := w.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	part, err := w.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = part.Write(content)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return payload{w.FormDataContentType(), buf.Bytes()}
}

// pass sends one valid request of every route of the engine, each object it
// changes made in the same pass, and tells whether every one succeeded.
func (s *sweeper) pass(n int) bool {
	s.mu.Lock()
	s.failures = nil
	s.mu.Unlock()
	s.ok = true
	t, fx := s.t, s.fx
	seq := fmt.Sprintf("%d-%d-%d", s.id, n, time.Now().UnixNano()%1e9)
	js := func(v any) payload { return jsonPayload(t, v) }

	// Platform.
	for _, p := range []string{"/healthz", "/readyz", "/versions", "/openapi.json", "/docs"} {
		s.get(p, p, "")
	}
	s.get("/docs/*asset", "/docs/docs.js", "")
	s.get("/metrics", "/metrics", fx.admin)
	for _, m := range []string{"system", "logistics", "livestock"} {
		s.get("/"+m+"/v1/openapi.json", "/"+m+"/v1/openapi.json", "")
		s.get("/"+m+"/v1/admin/settings", "/"+m+"/v1/admin/settings", fx.admin)
		s.send(http.MethodPut, "/"+m+"/v1/admin/settings", "/"+m+"/v1/admin/settings", fx.admin, js(map[string]any{"logging": map[string]any{"level": "error"}}), http.StatusOK)
	}

	// System: reference data, locations, files, conversations, experts, short links, cache.
	s.get("/system/v1/settings", "/system/v1/settings", fx.farmer)
	s.get("/system/v1/settings/:country", "/system/v1/settings/GB", fx.farmer)
	s.get("/system/v1/countries", "/system/v1/countries", "")
	s.get("/system/v1/regions", "/system/v1/regions?countryISO=GB", "")
	s.get("/system/v1/commodities", "/system/v1/commodities?countryISO=GB", "")
	s.get("/system/v1/commodities/:id/specification", "/system/v1/commodities/1/specification?commodityType=Milling&commodityGrade=Group%201", fx.farmer)
	s.post("/system/v1/commodities/varieties/import", "/system/v1/commodities/varieties/import", fx.admin,
		multipartFile(t, map[string]string{"organisationId": demoAdmin.OrgID}, "varieties.csv", []byte("commodityId,type,grade,variety\n1,Milling,Group 1,Crusoe\n")))
	s.post("/system/v1/cache", "/system/v1/cache", fx.admin, js(map[string]any{"prefixes": []string{"refdata:"}}))
	s.get("/system/v1/locations/search", "/system/v1/locations/search?query=kendal", fx.farmer)
	s.get("/system/v1/locations/address", "/system/v1/locations/address?id=pc:IE:T12", fx.farmer)
	s.get("/system/v1/locations/coordinates", "/system/v1/locations/coordinates?lat=54.3285&lon=-2.7455", fx.farmer)
	s.get("/system/v1/locations/three-word-address", "/system/v1/locations/three-word-address?query=apple.meadow.tractor", fx.farmer)

	file := s.created(s.upload(fx.farmer))
	s.get("/system/v1/files/:id", "/system/v1/files/"+fx.file, fx.farmer)
	s.get("/system/v1/files/:id", "/system/v1/files/"+fx.file+"?thumb=100x100", fx.farmer)
	s.get("/system/v1/files/:id/info", "/system/v1/files/"+fx.file+"/info", fx.farmer)
	s.send(http.MethodDelete, "/system/v1/files/:id", "/system/v1/files/"+or(file), fx.farmer, payload{}, http.StatusOK)

	// Resumable uploads (tus): create, ask the offset, send the whole file,
	// and remove a second upload.
	s.tus(http.MethodOptions, "/system/v1/uploads", "/system/v1/uploads", "", nil, nil, http.StatusNoContent)
	meta := "bucket " + base64.StdEncoding.EncodeToString([]byte("images")) + ",type " + base64.StdEncoding.EncodeToString([]byte("image")) +
		",name " + base64.StdEncoding.EncodeToString([]byte("sweep-"+seq+".png"))
	content := photo(color.RGBA{R: uint8(n), G: uint8(s.id), B: 7, A: 255})
	create := map[string]string{"Upload-Length": strconv.Itoa(len(content)), "Upload-Metadata": meta}
	up := locationPath(s.tus(http.MethodPost, "/system/v1/uploads", "/system/v1/uploads", fx.farmer, create, nil, http.StatusCreated))
	s.tus(http.MethodHead, "/system/v1/uploads/:id", up, fx.farmer, nil, nil, http.StatusOK)
	s.tus(http.MethodPatch, "/system/v1/uploads/:id", up, fx.farmer, map[string]string{"Upload-Offset": "0"}, content, http.StatusNoContent)
	gone := locationPath(s.tus(http.MethodPost, "/system/v1/uploads", "/system/v1/uploads", fx.farmer, create, nil, http.StatusCreated))
	s.tus(http.MethodDelete, "/system/v1/uploads/:id", gone, fx.farmer, nil, nil, http.StatusNoContent)

	conv := field(s.post("/system/v1/conversations", "/system/v1/conversations", fx.buyer, js(map[string]any{
		"to": demoFarmer.UserID, "message": "Sweep " + seq + ": can you deliver?", "title": "Sweep " + seq})), "conversationId")
	s.get("/system/v1/conversations", "/system/v1/conversations", fx.farmer)
	s.stream("/system/v1/events", "/system/v1/events", fx.farmer)
	s.get("/system/v1/conversations/listing/:id", "/system/v1/conversations/listing/"+fx.listing, fx.buyer)
	s.get("/system/v1/conversations/:id", "/system/v1/conversations/"+fx.conversation, fx.farmer)
	s.post("/system/v1/conversations/:id/messages", "/system/v1/conversations/"+or(conv)+"/messages", fx.farmer,
		js(map[string]any{"to": demoBuyer.UserID, "message": "Yes, any weekday (" + seq + ")."}))
	s.post("/system/v1/experts/questions", "/system/v1/experts/questions", fx.farmer, js(map[string]any{"question": "Is 72 kg/hl still milling? (" + seq + ")", "files": []any{}}))
	s.post("/system/v1/experts/grain-samples", "/system/v1/experts/grain-samples", fx.farmer, js(map[string]any{"files": []any{map[string]any{"id": fx.file}}}))
	code := field(s.post("/system/v1/short-urls", "/system/v1/short-urls", "", js(map[string]any{"template": "default", "url": "https://agritrade.example/sweep/" + seq})), "code")
	s.get("/system/v1/short-urls/:code", "/system/v1/short-urls/"+fx.code, fx.admin)
	if code == "" {
		code = fx.code // a real code, so that the redirect still reads the database
	}
	s.send(http.MethodGet, "/s/:code", "/s/"+url.PathEscape(code), "", payload{}, http.StatusFound)

	// Logistics: a load taken through its whole life, twice (both proof routes).
	for _, batchProof := range []bool{false, true} {
		load := s.created(s.post("/logistics/v1/loads", "/logistics/v1/loads", fx.farmer, js(loadBodyMap(fmt.Sprintf("SW-%s-%v", seq, batchProof), 3))))
		s.post("/logistics/v1/loads/send-to-carrier", "/logistics/v1/loads/send-to-carrier", fx.farmer,
			js([]map[string]any{{"loadId": or(load), "carrierId": demoHaul.OrgID, "carrierName": demoHaul.OrgName}}))
		s.post("/logistics/v1/loads/send-to-driver", "/logistics/v1/loads/send-to-driver", fx.haulier,
			js([]map[string]any{{"loadId": or(load), "driverId": demoDriver.UserID, "driverName": demoDriver.Name}}))
		pod := map[string]any{"weightNet": 28.7, "ticketNumber": "WB-" + seq, "vehicleRegistration": "CU70 HGV", "files": []any{}}
		if batchProof {
			pod["loadId"] = or(load)
			s.post("/logistics/v1/loads/proof-of-delivery", "/logistics/v1/loads/proof-of-delivery", fx.driver, js([]any{pod}))
		} else {
			s.post("/logistics/v1/loads/:id/proof-of-delivery", "/logistics/v1/loads/"+or(load)+"/proof-of-delivery", fx.driver, js(pod))
		}
	}
	s.post("/logistics/v1/loads/carrier", "/logistics/v1/loads/carrier", fx.haulier, js(map[string]any{
		"carrierId": demoHaul.OrgID, "carrierName": demoHaul.OrgName, "commodityId": 2, "reference": "CR-" + seq,
		"deliveryDateISO": time.Now().UTC().AddDate(0, 0, 4).Format(time.DateOnly), "weight": 27.5, "tags": []string{"outage"}}))
	s.post("/logistics/v1/loads/batch", "/logistics/v1/loads/batch", fx.farmer, multipartFile(t, nil, "loads.csv",
		[]byte("commodityId,reference,deliveryDateISO,weight\n1,BT-"+seq+","+time.Now().UTC().AddDate(0, 0, 6).Format(time.DateOnly)+",29.5\n")))
	s.get("/logistics/v1/loads", "/logistics/v1/loads", fx.farmer)
	s.get("/logistics/v1/loads/by-ids", "/logistics/v1/loads/by-ids?ids="+fx.load, fx.farmer)
	s.get("/logistics/v1/loads/completed", "/logistics/v1/loads/completed", fx.driver)
	s.get("/logistics/v1/loads/:id", "/logistics/v1/loads/"+fx.load, fx.farmer)

	// Livestock: a listing of every kind; the first taken through its life.
	s.get("/livestock/v1/categories", "/livestock/v1/categories", fx.farmer)
	s.get("/livestock/v1/listings", "/livestock/v1/listings", fx.farmer)
	var listing string
	for i, kind := range []string{"sheep", "cattle", "working-dogs", "feed", "bedding"} {
		idx := map[string]int{"sheep": 0, "cattle": 3, "working-dogs": 6, "feed": 7, "bedding": 9}[kind]
		id := s.created(s.post("/livestock/v1/listings/"+kind, "/livestock/v1/listings/"+kind, fx.farmer, s.listing(idx)))
		if i == 0 {
			listing = id
		}
	}
	l := "/livestock/v1/listings/" + or(listing)
	s.get("/livestock/v1/listings/:id", l, fx.farmer)
	s.send(http.MethodPatch, "/livestock/v1/listings/:id", l, fx.farmer, js(map[string]any{"description": "Updated during sweep " + seq}), http.StatusOK)
	s.send(http.MethodPut, "/livestock/v1/listings/:id/wishlist", l+"/wishlist", fx.buyer, payload{}, http.StatusOK)
	s.send(http.MethodDelete, "/livestock/v1/listings/:id/wishlist", l+"/wishlist", fx.buyer, payload{}, http.StatusOK)
	s.post("/livestock/v1/listings/:id/report", l+"/report", fx.buyer, js(map[string]any{"reason": "other", "message": nil}))
	s.get("/livestock/v1/admin/reports", "/livestock/v1/admin/reports", fx.admin)
	s.post("/livestock/v1/admin/listings/:id/review", "/livestock/v1/admin/listings/"+or(listing)+"/review", fx.admin, js(map[string]any{"decision": "clear"}))
	s.post("/livestock/v1/listings/:id/close", l+"/close", fx.farmer, js(map[string]any{"status": "sold"}))
	saved := s.created(s.post("/livestock/v1/saved-searches", "/livestock/v1/saved-searches", fx.buyer,
		js(map[string]any{"name": "Sweep " + seq, "query": map[string]any{"f:commodityType": "sheep", "latitude": 54.3, "longitude": -2.7, "distanceKm": 50}})))
	s.get("/livestock/v1/saved-searches", "/livestock/v1/saved-searches", fx.buyer)
	s.send(http.MethodDelete, "/livestock/v1/saved-searches/:id", "/livestock/v1/saved-searches/"+or(saved), fx.buyer, payload{}, http.StatusOK)
	return s.ok
}
