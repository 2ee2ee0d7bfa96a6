package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostileMemoryBound is the stated bound (README, openapi.yaml) of what the
// hostile imports below may add to the peak resident memory of the server, all
// of them running at once (imports.max_in_flight of them).
const hostileMemoryBound = 64 << 20

// hostileInFlight is the import limit of the server the tests start.
const hostileInFlight = 4

// importServer starts `agritrade serve` on SQLite with the import limit.
func importServer(t *testing.T, extra ...string) *child {
	t.Helper()
	data := t.TempDir()
	env := append([]string{"AGRITRADE_DATA_DIR=" + data, "AGRITRADE_BUS_BACKEND=memory", "AGRITRADE_AUTH_SECRET=" + faultSecret,
		"AGRITRADE_RATELIMIT_PER_MINUTE=0", "AGRITRADE_IMPORTS_MAX_IN_FLIGHT=" + strconv.Itoa(hostileInFlight), "TMPDIR=" + data}, extra...)
	c := spawn(t, "server", env, "serve")
	if _, err := c.ready(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

// xlsxParts writes a workbook whose parts come from parts (name → writer of the
// part's content), deflated.
func xlsxParts(t testing.TB, parts map[string]func(io.Writer)) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	base := map[string]func(io.Writer){
		"[Content_Types].xml": func(w io.Writer) {
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"></Types>`)
		},
		"xl/workbook.xml": func(w io.Writer) {
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>`)
		},
		"xl/_rels/workbook.xml.rels": func(w io.Writer) {
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>`)
		},
	}
	for k, v := range parts {
		base[k] = v
	}
	for _, name := range []string{"[Content_Types].xml", "xl/workbook.xml", "xl/_rels/workbook.xml.rels", "xl/sharedStrings.xml", "xl/worksheets/sheet1.xml"} {
		fn := base[name]
		if fn == nil {
			continue
		}
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		fn(w)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sheetHead opens a sheet whose first row is header.
func sheetHead(header []string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1">`)
	for i, h := range header {
		fmt.Fprintf(&b, `<c r="%c1" t="inlineStr"><is><t>%s</t></is></c>`, 'A'+i, h)
	}
	b.WriteString(`</row>`)
	return b.String()
}

// hostileFiles are the uploads of the memory test, each with the route's
// header so that its rows are read: each must cost bounded memory and answer
// 4xx.
func hostileFiles(t testing.TB, header []string) map[string][]byte {
	spaces := bytes.Repeat([]byte(" "), 1<<20)
	files := map[string][]byte{}
	head := sheetHead(header)
	// The observed case: a small workbook whose sheet holds 400 MiB of whitespace.
	files["xlsx 400 MiB whitespace"] = xlsxParts(t, map[string]func(io.Writer){
		"xl/worksheets/sheet1.xml": func(w io.Writer) {
			_, _ = io.WriteString(w, head+`<row r="2">`)
			for range 400 {
				_, _ = w.Write(spaces)
			}
			_, _ = io.WriteString(w, `</row></sheetData></worksheet>`)
		},
	})
	// 110 000 rows of a short random cell and 1000 blanks: packed about 50
	// times, under the zip-bomb ratio and the part limit, so the sheet is
	// parsed to its row limit.
	files["xlsx 120 MiB streamed to row limit"] = xlsxParts(t, map[string]func(io.Writer){
		"xl/worksheets/sheet1.xml": func(w io.Writer) {
			_, _ = io.WriteString(w, head)
			blanks := bytes.Repeat([]byte(" "), 1000)
			rnd := uint64(1)
			for r := 2; r <= 110000; r++ {
				rnd = rnd*6364136223846793005 + 1442695040888963407
				_, _ = fmt.Fprintf(w, `<row r="%d"><c r="A%d" t="inlineStr"><is><t>%016x</t></is></c></row>`, r, r, rnd)
				_, _ = w.Write(blanks)
			}
			_, _ = io.WriteString(w, `</sheetData></worksheet>`)
		},
	})
	// One shared string of 30 KiB referenced by 20 cells of 100 000 rows: 60 GB
	// of text from a file of a few MiB.
	files["xlsx shared-string amplification"] = xlsxParts(t, map[string]func(io.Writer){
		"xl/sharedStrings.xml": func(w io.Writer) {
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>`+strings.Repeat("x", 30<<10)+`</t></si></sst>`)
		},
		"xl/worksheets/sheet1.xml": func(w io.Writer) {
			_, _ = io.WriteString(w, head)
			var row strings.Builder
			for c := range 20 {
				fmt.Fprintf(&row, `<c r="%c%%d" t="s"><v>0</v></c>`, 'A'+c)
			}
			tmpl := row.String()
			for r := 2; r <= 100000; r++ {
				_, _ = fmt.Fprintf(w, `<row r="%d">`+strings.ReplaceAll(tmpl, "%d", strconv.Itoa(r))+`</row>`, r)
			}
			_, _ = io.WriteString(w, `</sheetData></worksheet>`)
		},
	})
	// A CSV whose one quoted cell runs for 60 MiB, line breaks included.
	var huge bytes.Buffer
	huge.WriteString(strings.Join(header, ",") + "\n\"")
	line := append(bytes.Repeat([]byte("y"), 1023), '\n')
	for range 60 << 10 {
		huge.Write(line)
	}
	huge.WriteString("\",1,x\n")
	files["csv one 60 MiB cell"] = huge.Bytes()
	// A CSV of 8 million empty cells on one line.
	files["csv 8 million cells"] = append([]byte(strings.Join(header, ",")+"\n"), bytes.Repeat([]byte(","), 8<<20)...)
	return files
}

// procMemory reads a field of /proc/<pid>/status in bytes.
func procMemory(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

type importCall struct {
	route, token string
	ok           []byte // a small valid file for the route
	files        map[string][]byte
}

const (
	okLoads     = "reference,commodityId,deliveryDateISO\nW-1,1,2026-10-01\n"
	okVarieties = "commodityId,type,grade,variety\n1,Milling,Group 1,Crusoe\n"
)

// TestHostileImportsBoundedMemory sends hostile spreadsheets to both import
// routes of a real server, hostileInFlight at once, and checks that each gets a
// 4xx naming the bound and that the server's peak resident memory grows by less
// than hostileMemoryBound.
func TestHostileImportsBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 400 MiB of hostile input")
	}
	srv := importServer(t)
	pid := srv.cmd.Process.Pid
	routes := map[string]importCall{
		"loads": {route: "/logistics/v1/loads/batch", token: faultToken(t, demoFarmer), ok: []byte(okLoads),
			files: hostileFiles(t, []string{"reference", "commodityId", "deliveryDateISO"})},
		"varieties": {route: "/system/v1/commodities/varieties/import", token: faultToken(t, demoAdmin), ok: []byte(okVarieties),
			files: hostileFiles(t, []string{"commodityId", "type", "grade", "variety"})},
	}
	files := routes["loads"].files
	client := &http.Client{Timeout: 2 * time.Minute}
	// A first legitimate import of each kind warms the server up (pools, code).
	for _, rc := range routes {
		p := multipartFile(t, nil, "ok.csv", rc.ok)
		if status, _, body, err := do(context.Background(), client, http.MethodPost, srv.base+rc.route, rc.token, p.ctype, p.body); err != nil || status != http.StatusOK {
			t.Fatalf("warm-up import on %s: %d %s %v", rc.route, status, body, err)
		}
	}
	before := procMemory(t, pid, "VmRSS")
	// Reset the high-water mark so that VmHWM is the peak of what follows.
	hwmReset := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
	var peak int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
				for _, l := range strings.Split(string(b), "\n") {
					if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
						kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
						peak = max(peak, kb<<10)
					}
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	type outcome struct {
		name, route string
		status      int
		code, msg   string
		took        time.Duration
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
	)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	// Every file to both routes, hostileInFlight requests at a time.
	type job struct{ name, route string }
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range hostileInFlight {
		wg.Go(func() {
			for j := range jobs {
				rc := routes[j.route]
				p := multipartFile(t, nil, "hostile", rc.files[j.name])
				start := time.Now()
				status, _, body, err := do(context.Background(), client, http.MethodPost, srv.base+rc.route, rc.token, p.ctype, p.body)
				if err != nil {
					t.Errorf("%s on %s: %v", j.name, j.route, err)
					continue
				}
				var e struct{ Status, Code, Message string }
				_ = json.Unmarshal(body, &e)
				mu.Lock()
				outcomes = append(outcomes, outcome{j.name, j.route, status, e.Code, e.Message, time.Since(start)})
				mu.Unlock()
			}
		})
	}
	for _, n := range names {
		for r := range routes {
			jobs <- job{n, r}
		}
	}
	close(jobs)
	wg.Wait()
	close(stop)
	<-sampled
	if hwmReset {
		peak = max(peak, procMemory(t, pid, "VmHWM"))
	}
	growth := peak - before
	t.Logf("%-36s %-9s %6s %-18s %8s  %s", "file", "route", "status", "code", "time", "message")
	for _, o := range outcomes {
		t.Logf("%-36s %-9s %6d %-18s %8s  %s", o.name, o.route, o.status, o.code, o.took.Round(time.Millisecond), o.msg)
	}
	t.Logf("resident memory: %d MiB before, peak %d MiB, growth %d MiB (bound %d MiB, %d imports at once)",
		before>>20, peak>>20, growth>>20, hostileMemoryBound>>20, hostileInFlight)
	for _, o := range outcomes {
		if o.status < 400 || o.status >= 500 || o.code == "" || o.code == "rate_limited" || !strings.ContainsAny(o.msg, "0123456789") {
			t.Errorf("%s on %s: %d %s %q, want a 4xx naming the bound", o.name, o.route, o.status, o.code, o.msg)
		}
	}
	if len(outcomes) != 2*len(files) {
		t.Errorf("%d answers, want %d", len(outcomes), 2*len(files))
	}
	if growth > hostileMemoryBound {
		t.Errorf("peak resident memory grew by %d MiB, over the bound of %d MiB", growth>>20, hostileMemoryBound>>20)
	}
}

// TestImportsInFlightLimited holds hostileInFlight imports open (their bodies
// not yet sent) and checks that one more, on either route, answers 429 with
// Retry-After and the error body before its body is read, and that a slot
// freed admits the next one.
func TestImportsInFlightLimited(t *testing.T) {
	srv := importServer(t)
	farmer, admin := faultToken(t, demoFarmer), faultToken(t, demoAdmin)
	client := &http.Client{Timeout: time.Minute}
	// Each held import is a raw connection that has sent its headers and no
	// body: the server has certainly read them (an http.Client may keep them
	// in its buffer until body bytes come), and the import waits for its file.
	type held struct {
		conn net.Conn
		br   *bufio.Reader
	}
	addr := strings.TrimPrefix(srv.base, "http://")
	var holds []held
	for i := range hostileInFlight {
		route, token := "/logistics/v1/loads/batch", farmer
		if i%2 == 1 {
			route, token = "/system/v1/commodities/varieties/import", admin
		}
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: multipart/form-data; boundary=held\r\nTransfer-Encoding: chunked\r\n\r\n", route, addr, token); err != nil {
			t.Fatal(err)
		}
		holds = append(holds, held{conn: conn, br: bufio.NewReader(conn)})
	}
	// Wait until the server counts them in flight (its gauge), so that the
	// refusal below is about the limit and not about when they arrived.
	inFlight := func() string {
		_, _, body, err := do(context.Background(), client, http.MethodGet, srv.base+"/metrics", admin, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(l, "agritrade_imports_in_flight "); ok {
				return v
			}
		}
		return "absent"
	}
	want := strconv.Itoa(hostileInFlight)
	for deadline := time.Now().Add(20 * time.Second); inFlight() != want; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the %d held imports never were all in flight: agritrade_imports_in_flight %s", hostileInFlight, inFlight())
		}
	}
	csvBody := multipartFile(t, nil, "ok.csv", []byte(okLoads))
	// The held requests take their slots once their headers are read: retry
	// until the extra one is refused (each refused attempt costs nothing).
	var status int
	var hdr http.Header
	var body []byte
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var err error
		status, hdr, body, err = do(context.Background(), client, http.MethodPost, srv.base+"/logistics/v1/loads/batch", farmer, csvBody.ctype, csvBody.body)
		if err != nil {
			t.Fatal(err)
		}
		if status == http.StatusTooManyRequests {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status != http.StatusTooManyRequests {
		t.Fatalf("an import over the limit answered %d %s, want 429", status, body)
	}
	var e struct{ Status, Code, Message string }
	if err := json.Unmarshal(body, &e); err != nil || e.Status != "error" || e.Code != "rate_limited" || !strings.Contains(e.Message, strconv.Itoa(hostileInFlight)) {
		t.Fatalf("429 body %s", body)
	}
	if ra, err := strconv.Atoi(hdr.Get("Retry-After")); err != nil || ra <= 0 {
		t.Fatalf("Retry-After %q", hdr.Get("Retry-After"))
	}
	if status, _, body, _ := do(context.Background(), client, http.MethodPost, srv.base+"/system/v1/commodities/varieties/import", admin, csvBody.ctype, csvBody.body); status != http.StatusTooManyRequests {
		t.Fatalf("the variety import over the limit answered %d %s, want 429 (one limit for both routes)", status, body)
	}
	// Finish one held import: its slot admits the next.
	h := holds[0]
	form := "--held\r\nContent-Disposition: form-data; name=\"file\"; filename=\"ok.csv\"\r\n\r\n" +
		"reference,commodityId,deliveryDateISO\nH-1,1,2026-10-01\n\r\n--held--\r\n"
	if _, err := fmt.Fprintf(h.conn, "%x\r\n%s\r\n0\r\n\r\n", len(form), form); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(h.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the held import answered %d", res.StatusCode)
	}
	if status, _, body, _ := do(context.Background(), client, http.MethodPost, srv.base+"/logistics/v1/loads/batch", farmer, csvBody.ctype, csvBody.body); status != http.StatusOK {
		t.Fatalf("an import after a slot was freed answered %d %s", status, body)
	}
}
