// Command bench measures the Logistics module at scale on PostgreSQL: it fills
// a fresh database with generated loads (COPY), then times the real search
// path (the HTTP engine with auth, the service and the store), the streamed
// CSV export and a 100,000-row batch upload, and prints the figures.
//
// It runs only when AGRITRADE_BENCH_POSTGRES_DSN names a server it may create
// databases on (the database it creates is dropped at the end unless -keep):
//
//	AGRITRADE_BENCH_POSTGRES_DSN='postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable' \
//	  go run ./logistics/bench -loads 1000000
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agritrade/api/logistics"
	"github.com/agritrade/api/logistics/internal/loads"
	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/module"
	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
)

// EnvDSN gates the benchmark.
const EnvDSN = "AGRITRADE_BENCH_POSTGRES_DSN"

type options struct {
	loads      int
	organisers int
	carriers   int
	drivers    int
	runs       int
	importRows int
	keep       bool
	reuse      string
	cpuProfile string
	only       string
}

func main() {
	var o options
	flag.IntVar(&o.loads, "loads", 1_000_000, "loads to generate")
	flag.IntVar(&o.organisers, "organisers", 2000, "organiser organisations (one more, org-big, holds 5% of the loads)")
	flag.IntVar(&o.carriers, "carriers", 300, "carrier organisations")
	flag.IntVar(&o.drivers, "drivers", 5000, "drivers")
	flag.IntVar(&o.runs, "runs", 200, "timed requests per search scenario")
	flag.IntVar(&o.importRows, "import-rows", 100_000, "rows of the batch upload")
	flag.BoolVar(&o.keep, "keep", false, "keep the generated database")
	flag.StringVar(&o.reuse, "reuse", "", "database of an earlier -keep run to measure again without generating")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the measurements to this file")
	flag.StringVar(&o.only, "only", "", "run only this part: search, catchup, export or upload")
	flag.Parse()
	admin := os.Getenv(EnvDSN)
	if admin == "" {
		fmt.Printf("logistics bench skipped: set %s to a PostgreSQL server it may create a database on\n", EnvDSN)
		return
	}
	if err := run(context.Background(), admin, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// catalogue is the reference data the generated loads use.
type catalogue struct{}

var commodities = map[int]string{1: "Wheat", 2: "Barley", 3: "Oilseed Rape", 4: "Oats", 5: "Beans"}

func (catalogue) LookupCommodity(_ context.Context, id int) (string, string, float64, bool, error) {
	name, ok := commodities[id]
	return name, "tonne", 1000, ok, nil
}

func run(ctx context.Context, admin string, o options) error {
	name := "agritrade_bench_" + randomHex(5)
	adminDB, err := db.Open(ctx, admin, db.Options{MaxOpenConns: 1})
	if err != nil {
		return err
	}
	defer func() { _ = adminDB.Close() }()
	if o.reuse != "" {
		name, o.keep = o.reuse, true
	} else if _, err := adminDB.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return err
	}
	if !o.keep {
		defer func() {
			_, _ = adminDB.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		}()
	}
	u, err := url.Parse(admin)
	if err != nil {
		return err
	}
	u.Path = "/" + name
	fmt.Printf("database %s (%s)\n", name, map[bool]string{true: "kept", false: "dropped at the end"}[o.keep])

	cfg := config.Default()
	cfg.DB.DSN = u.String()
	cfg.DataDir, err = os.MkdirTemp("", "logistics-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(cfg.DataDir) }()
	cfg.Auth.Secret = "bench-secret"
	cfg.Log.Level = "warn"
	cfg.Bus.Backend = "memory"
	p, err := app.Open(ctx, cfg, app.Options{LogOutput: io.Discard})
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }()
	mods := []module.Module{logistics.New(p.Deps(logistics.Name), catalogue{})}
	if err := p.MigrateUp(ctx, mods); err != nil {
		return err
	}
	srv, err := app.NewServer(p, "bench", mods...)
	if err != nil {
		return err
	}
	b := &bench{o: o, srv: srv, secret: []byte(cfg.Auth.Secret)}

	if o.reuse == "" {
		start := time.Now()
		if err := b.generate(ctx, p.DB); err != nil {
			return err
		}
		fmt.Printf("generated %d loads in %s (COPY, indexes in place)\n", o.loads, time.Since(start).Round(time.Second))
		if _, err := p.DB.ExecContext(ctx, "VACUUM ANALYSE logistics_loads"); err != nil {
			return err
		}
	} else if _, err := p.DB.ExecContext(ctx, "DELETE FROM logistics_loads WHERE organiser_id = 'org-importer'"); err != nil {
		return err // the upload measures creating its loads again
	}
	var size string
	_ = p.DB.QueryRowContext(ctx, "SELECT pg_size_pretty(pg_total_relation_size('logistics_loads'))").Scan(&size)
	fmt.Printf("table with indexes: %s\n\n", size)

	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if o.only == "" || o.only == "search" {
		b.searches()
		fmt.Println()
	}
	if o.only == "" || o.only == "catchup" {
		if err := b.catchUp(ctx, p.DB); err != nil {
			return err
		}
		fmt.Println()
	}
	if o.only == "" || o.only == "export" {
		if err := b.export(); err != nil {
			return err
		}
		fmt.Println()
	}
	if o.only == "" || o.only == "upload" {
		return b.batchUpload()
	}
	return nil
}

type bench struct {
	o      options
	srv    *app.Server
	secret []byte
}

func (b *bench) organiser(i int) string { return "org-" + strconv.Itoa(i) }
func (b *bench) carrier(i int) string   { return "carrier-" + strconv.Itoa(i) }
func (b *bench) driver(i int) string    { return "driver-" + strconv.Itoa(i) }

// Names are built from short word lists, as real ones repeat words ("Farm",
// "Haulage", common surnames): the search must cope with common trigrams.
var (
	places   = []string{"Hill", "Fen", "Marsh", "Oak", "Brook", "Ash", "Willow", "Manor", "Grange", "Mill", "Meadow", "Church", "Lodge", "Moor", "Vale", "Heath", "Park", "Home", "Field", "Wold", "Beck", "Thorn", "Elm", "Rook", "Low", "High", "Cross", "Bridge", "Wood", "Green"}
	kinds    = []string{"Farm", "Farms", "Grain Ltd", "Agri", "Estates", "Farming Partners", "Arable", "Produce"}
	surnames = []string{"Smith", "Jones", "Taylor", "Brown", "Wilson", "Evans", "Thomas", "Johnson", "Roberts", "Walker", "Wright", "Robinson", "Thompson", "White", "Hughes", "Edwards", "Green", "Hall", "Wood", "Harris", "Clarke", "Jackson", "Turner", "Hill", "Moore", "Cooper", "Ward", "Morris", "King", "Baker"}
	firsts   = []string{"James", "Emma", "Oliver", "Sophie", "Harry", "Grace", "Jack", "Lucy", "George", "Ellie", "Tom", "Megan", "Sam", "Chloe", "Dan", "Hannah"}
	trades   = []string{"Haulage", "Transport", "Logistics", "Freight", "Carriers"}
)

// organiserName is the name of organiser i; org-big is "Big Grain Group".
func organiserName(id string) string {
	if id == "org-big" {
		return "Big Grain Group"
	}
	i, _ := strconv.Atoi(strings.TrimPrefix(id, "org-"))
	return places[i%len(places)] + " " + kinds[(i/len(places))%len(kinds)]
}

// referencePrefix is how organiser i numbers its loads: initials and a number.
func referencePrefix(id string) string {
	var b strings.Builder
	for _, w := range strings.Fields(organiserName(id)) {
		b.WriteByte(w[0])
	}
	i, _ := strconv.Atoi(strings.TrimPrefix(id, "org-"))
	return fmt.Sprintf("%s%d-", b.String(), i%97)
}

func carrierName(i int) string {
	return surnames[i%len(surnames)] + " " + trades[(i/len(surnames))%len(trades)]
}

func driverName(i int) string {
	return firsts[i%len(firsts)] + " " + surnames[(i/len(firsts))%len(surnames)]
}

var (
	base      = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	daySpan   = 3 * 365
	postcodes = []string{"CB", "PE", "NR", "IP", "LN", "YO", "HU", "DN", "SN", "OX", "EH", "AB", "DD", "BT", "SY"}
)

// letter is a random capital letter.
func letter(r *mrand.Rand) byte { return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[r.IntN(26)] }

func postcode(r *mrand.Rand) string {
	return fmt.Sprintf("%s%d %d%c%c", postcodes[r.IntN(len(postcodes))], 1+r.IntN(30), r.IntN(10), letter(r), letter(r))
}

// generate COPYs the loads in: 5% to org-big, the rest spread over the
// organisers; 70% with a carrier, half with a driver; 60% completed.
func (b *bench) generate(ctx context.Context, bdb *bun.DB) error {
	conn, err := bdb.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	pr, pw := io.Pipe()
	go func() {
		w := csv.NewWriter(pw)
		r := mrand.New(mrand.NewPCG(1, 2)) //nolint:gosec // deterministic test data, not secrets
		now := time.Now().UTC()
		for i := 0; i < b.o.loads; i++ {
			orgID := b.organiser(r.IntN(b.o.organisers))
			if r.IntN(100) < 5 {
				orgID = "org-big"
			}
			day := r.IntN(daySpan)
			l := &loads.Load{
				ID: uuid.Must(uuid.NewV7()).String(), Reference: fmt.Sprintf("%s%07d", referencePrefix(orgID), i),
				Organiser: loads.Party{ID: orgID, Name: organiserName(orgID)}, Commodity: loads.Commodity{ID: 1 + r.IntN(5), Unit: "tonne", Conversion: 1000},
				DeliveryDate: base.AddDate(0, 0, day), PickupPostcode: postcode(r), DropoffPostcode: postcode(r),
				TicketNumber: fmt.Sprintf("WB-%06d", r.IntN(1_000_000)), VehicleRegistration: fmt.Sprintf("AB%02d %c%c%c", r.IntN(100), letter(r), letter(r), letter(r)),
				Status: loads.StatusUpcoming, CreatedBy: "bench", CreatedAt: now, UpdatedAt: now,
			}
			// Changes spread over the last 30 days, so that a catch-up
			// (updatedSinceUTC) of the last hour or day finds a realistic few.
			l.UpdatedAt = now.Add(-time.Duration(r.Int64N(int64(catchUpSpan))))
			l.CreatedAt = l.UpdatedAt
			l.Commodity.Name = commodities[l.Commodity.ID]
			l.DeliveryDateISO = l.DeliveryDate.Format(time.DateOnly)
			w1 := float64(20 + r.IntN(10))
			l.Weight = &w1
			if r.IntN(100) < 70 {
				ci := r.IntN(b.o.carriers)
				l.Carrier = &loads.Party{ID: b.carrier(ci), Name: carrierName(ci)}
			}
			switch s := r.IntN(100); {
			case s < 60:
				l.Status = loads.StatusCompleted
				wn := w1 - 0.3
				l.WeightNet = &wn
			case s < 70:
				l.Status = loads.StatusInTransit
			}
			if l.Status != loads.StatusUpcoming && r.IntN(100) < 70 {
				di := r.IntN(b.o.drivers)
				l.Driver = &loads.Party{ID: b.driver(di), Name: driverName(di)}
			}
			_ = w.Write(copyRow(l))
		}
		w.Flush()
		pw.CloseWithError(w.Error())
	}()
	_, err = pgdriver.CopyFrom(ctx, conn, pr, "COPY logistics_loads ("+strings.Join(copyColumns, ", ")+") FROM STDIN WITH (FORMAT csv)")
	return err
}

var copyColumns = []string{
	"id", "reference", "organiser_id", "organiser_name", "carrier_id", "carrier_name", "driver_id", "driver_name",
	"commodity_id", "commodity_name", "weight_unit", "weight_conversion", "delivery_date", "delivery_date_iso",
	"pickup_postcode", "dropoff_postcode", "weight", "weight_net", "vehicle_registration", "ticket_number",
	"status", "files", "tags", "search", "creator_org_id", "created_by", "created_at", "updated_at",
}

// copyRow is a load as a COPY CSV row; an empty unquoted cell is NULL.
func copyRow(l *loads.Load) []string {
	party := func(p *loads.Party) (string, string) {
		if p == nil {
			return "", ""
		}
		return p.ID, p.Name
	}
	num := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'f', -1, 64)
	}
	cid, cname := party(l.Carrier)
	did, dname := party(l.Driver)
	ts := func(t time.Time) string { return t.Format("2006-01-02 15:04:05Z07:00") }
	return []string{
		l.ID, l.Reference, l.Organiser.ID, l.Organiser.Name, cid, cname, did, dname,
		strconv.Itoa(l.Commodity.ID), l.Commodity.Name, l.Commodity.Unit, "1000", ts(l.DeliveryDate), l.DeliveryDateISO,
		l.PickupPostcode, l.DropoffPostcode, num(l.Weight), num(l.WeightNet), l.VehicleRegistration, l.TicketNumber,
		string(l.Status), "[]", `["bench"]`, l.SearchText(), l.Organiser.ID, l.CreatedBy, ts(l.CreatedAt), ts(l.UpdatedAt),
	}
}

func (b *bench) token(p auth.Principal) string {
	tok, err := auth.Mint(b.secret, auth.MintOptions{Principal: p, TTL: time.Hour})
	if err != nil {
		panic(err)
	}
	return tok
}

// scenario is one kind of search request; next returns the principal and query of a run.
type scenario struct {
	name string
	next func(r *mrand.Rand) (auth.Principal, string)
}

func (b *bench) searches() {
	org := func(id string) auth.Principal {
		return auth.Principal{UserID: "u-" + id, OrgID: id, Orgs: []string{id}}
	}
	month := func(r *mrand.Rand) string {
		d := base.AddDate(0, 0, r.IntN(daySpan-31))
		return "startDateISO=" + d.Format(time.DateOnly) + "&endDateISO=" + d.AddDate(0, 1, 0).Format(time.DateOnly)
	}
	randomOrg := func(r *mrand.Rand) auth.Principal { return org(b.organiser(r.IntN(b.o.organisers))) }
	big := org("org-big")
	scenarios := []scenario{
		{"organiser (~475 loads), first page", func(r *mrand.Rand) (auth.Principal, string) { return randomOrg(r), "" }},
		{"organiser, one month", func(r *mrand.Rand) (auth.Principal, string) { return randomOrg(r), month(r) }},
		{"organiser, query (postcode)", func(r *mrand.Rand) (auth.Principal, string) {
			return randomOrg(r), "query=" + url.QueryEscape(postcodes[r.IntN(len(postcodes))]+strconv.Itoa(1+r.IntN(30)))
		}},
		{"big organiser (50k loads), first page", func(*mrand.Rand) (auth.Principal, string) { return big, "" }},
		{"big organiser, newest first, page 50", func(*mrand.Rand) (auth.Principal, string) { return big, "sortDesc=true&offset=1000" }},
		{"big organiser, one month, completed", func(r *mrand.Rand) (auth.Principal, string) { return big, month(r) + "&f:status=completed" }},
		{"big organiser, query (reference prefix)", func(r *mrand.Rand) (auth.Principal, string) {
			return big, fmt.Sprintf("query=BGG%d-0%03d", 0, r.IntN(1000))
		}},
		{"big organiser, query (ticket, rare)", func(r *mrand.Rand) (auth.Principal, string) {
			return big, fmt.Sprintf("query=WB-%06d", r.IntN(1_000_000))
		}},
		{"big organiser, sort by reference", func(*mrand.Rand) (auth.Principal, string) { return big, "sortBy=reference" }},
		{"big organiser, sort by status (no index)", func(*mrand.Rand) (auth.Principal, string) { return big, "sortBy=status" }},
		{"carrier (~2.3k loads), first page", func(r *mrand.Rand) (auth.Principal, string) { return org(b.carrier(r.IntN(b.o.carriers))), "" }},
		{"carrier, query (party name)", func(r *mrand.Rand) (auth.Principal, string) {
			return org(b.carrier(r.IntN(b.o.carriers))), "query=" + url.QueryEscape(places[r.IntN(len(places))]+" "+kinds[r.IntN(len(kinds))])
		}},
		{"driver (~70 loads)", func(r *mrand.Rand) (auth.Principal, string) {
			d := b.driver(r.IntN(b.o.drivers))
			return auth.Principal{UserID: d, OrgID: "org-" + d}, ""
		}},
	}
	fmt.Printf("search (GET /logistics/v1/loads through the engine), %d runs each\n", b.o.runs)
	fmt.Printf("%-42s %9s %9s %9s %9s\n", "scenario", "p50", "p90", "p99", "max")
	r := mrand.New(mrand.NewPCG(3, 4)) //nolint:gosec // deterministic test data, not secrets
	for _, sc := range scenarios {
		times := make([]time.Duration, 0, b.o.runs)
		var totals int64
		for i := 0; i < b.o.runs+5; i++ {
			p, q := sc.next(r)
			req := httptest.NewRequest(http.MethodGet, "/logistics/v1/loads?"+q, nil)
			req.Header.Set("Authorization", "Bearer "+b.token(p))
			rec := httptest.NewRecorder()
			t0 := time.Now()
			b.srv.Engine.ServeHTTP(rec, req)
			d := time.Since(t0)
			if rec.Code != http.StatusOK {
				fmt.Printf("  %s: %d %s\n", sc.name, rec.Code, rec.Body.String())
				return
			}
			if i >= 5 { // the first runs warm the caches
				times = append(times, d)
				n, _ := strconv.ParseInt(rec.Header().Get("X-Total-Count"), 10, 64)
				totals += n
			}
		}
		slices.Sort(times)
		pct := func(q float64) time.Duration {
			return times[int(math.Ceil(q*float64(len(times))))-1].Round(10 * time.Microsecond)
		}
		fmt.Printf("%-42s %9s %9s %9s %9s   (mean total %d)\n", sc.name, pct(0.5), pct(0.9), pct(0.99), times[len(times)-1].Round(10*time.Microsecond), totals/int64(len(times)))
	}
}

// discard is a flushing ResponseWriter that counts bytes and lines.
type discard struct {
	h     http.Header
	n     int64
	lines int
}

func (d *discard) Header() http.Header { return d.h }
func (d *discard) Write(p []byte) (int, error) {
	d.n += int64(len(p))
	d.lines += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}
func (d *discard) WriteHeader(int) {}
func (d *discard) Flush()          {}

// peakHeap samples the heap in use while fn runs and answers the peak above
// what was in use before.
func peakHeap(fn func() error) (uint64, error) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	err := fn()
	close(stop)
	wg.Wait()
	if peak.Load() < before {
		return 0, err
	}
	return peak.Load() - before, err
}

func (b *bench) export() error {
	big := auth.Principal{UserID: "u-big", OrgID: "org-big", Orgs: []string{"org-big"}}
	for _, c := range []struct{ name, path string }{
		{"completed export, org-big, all dates", "/logistics/v1/loads/completed"},
		{"search CSV, org-big, every load", "/logistics/v1/loads?format=csv"},
	} {
		req := httptest.NewRequest(http.MethodGet, c.path, nil)
		req.Header.Set("Authorization", "Bearer "+b.token(big))
		w := &discard{h: http.Header{}}
		var d time.Duration
		peak, _ := peakHeap(func() error {
			t0 := time.Now()
			b.srv.Engine.ServeHTTP(w, req)
			d = time.Since(t0)
			return nil
		})
		rows := w.lines - 1 // the header
		fmt.Printf("%-40s %7d rows, %.1f MiB in %s: %.0f rows/s, peak heap +%.1f MiB\n", c.name, rows, float64(w.n)/(1<<20),
			d.Round(time.Millisecond), float64(rows)/d.Seconds(), float64(peak)/(1<<20))
	}
	return nil
}

func (b *bench) batchUpload() error {
	f, err := os.CreateTemp("", "logistics-batch-*.csv")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(f.Name()) }()
	w := csv.NewWriter(f)
	_ = w.Write([]string{"organiserId", "organiserName", "commodityId", "reference", "deliveryDateISO", "weight", "weightNet", "ticketNumber", "vehicleRegistration", "pickupPostcode", "dropoffPostcode", "tags"})
	r := mrand.New(mrand.NewPCG(5, 6)) //nolint:gosec // deterministic test data, not secrets
	for i := 0; i < b.o.importRows; i++ {
		_ = w.Write([]string{"", "", strconv.Itoa(1 + r.IntN(5)), fmt.Sprintf("IMP-%07d", i), base.AddDate(0, 0, r.IntN(daySpan)).Format(time.DateOnly),
			strconv.Itoa(20 + r.IntN(10)), "", fmt.Sprintf("WB-%06d", i), "", postcode(r), postcode(r), "import;bench"})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	st, _ := f.Stat()
	p := auth.Principal{UserID: "u-importer", OrgID: "org-importer", OrgName: "Importer Ltd", Orgs: []string{"org-importer"}}
	for _, pass := range []string{"first upload (creates)", "same file again (no change)"} {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		body, ct := multipartBody(f)
		req := httptest.NewRequest(http.MethodPost, "/logistics/v1/loads/batch", body)
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Authorization", "Bearer "+b.token(p))
		rec := httptest.NewRecorder()
		var d time.Duration
		peak, _ := peakHeap(func() error {
			t0 := time.Now()
			b.srv.Engine.ServeHTTP(rec, req)
			d = time.Since(t0)
			return nil
		})
		if rec.Code != http.StatusOK {
			return fmt.Errorf("batch upload: %d %s", rec.Code, rec.Body.String())
		}
		fmt.Printf("batch upload %d rows (%.1f MiB CSV), %s: %s, %.0f rows/s, peak heap +%.1f MiB, answer %d bytes\n",
			b.o.importRows, float64(st.Size())/(1<<20), pass, d.Round(time.Millisecond), float64(b.o.importRows)/d.Seconds(), float64(peak)/(1<<20), rec.Body.Len())
	}
	return nil
}

// multipartBody streams a multipart body holding the file, without building it in memory.
func multipartBody(f io.Reader) (io.Reader, string) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("file", "batch.csv")
		if err == nil {
			_, err = io.Copy(part, f)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, mw.FormDataContentType()
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// catchUpSpan is how far back the generated loads' last changes go.
const catchUpSpan = 30 * 24 * time.Hour

// catchUp times catch-up requests (updatedSinceUTC, oldest change first)
// through the engine, and prints the plans PostgreSQL runs for them.
func (b *bench) catchUp(ctx context.Context, bdb *bun.DB) error {
	org := func(id string) auth.Principal {
		return auth.Principal{UserID: "u-" + id, OrgID: id, Orgs: []string{id}}
	}
	ago := func(d time.Duration) string {
		return "updatedSinceUTC=" + url.QueryEscape(time.Now().UTC().Add(-d).Format(time.RFC3339))
	}
	big := org("org-big")
	scenarios := []scenario{
		{"catch-up: organiser, last hour", func(r *mrand.Rand) (auth.Principal, string) {
			return org(b.organiser(r.IntN(b.o.organisers))), ago(time.Hour)
		}},
		{"catch-up: organiser, last day", func(r *mrand.Rand) (auth.Principal, string) {
			return org(b.organiser(r.IntN(b.o.organisers))), ago(24 * time.Hour)
		}},
		{"catch-up: big organiser (50k), last hour", func(*mrand.Rand) (auth.Principal, string) { return big, ago(time.Hour) }},
		{"catch-up: big organiser, last day", func(*mrand.Rand) (auth.Principal, string) { return big, ago(24 * time.Hour) }},
		{"catch-up: big organiser, last week, page 2", func(*mrand.Rand) (auth.Principal, string) { return big, ago(7*24*time.Hour) + "&offset=20" }},
		{"catch-up: carrier (~2.3k), last day", func(r *mrand.Rand) (auth.Principal, string) {
			return org(b.carrier(r.IntN(b.o.carriers))), ago(24 * time.Hour)
		}},
		{"catch-up: driver, last week", func(r *mrand.Rand) (auth.Principal, string) {
			d := b.driver(r.IntN(b.o.drivers))
			return auth.Principal{UserID: d, OrgID: "org-" + d}, ago(7 * 24 * time.Hour)
		}},
	}
	fmt.Printf("catch-up (GET /logistics/v1/loads?updatedSinceUTC=..., oldest change first, through the engine), %d runs each\n", b.o.runs)
	fmt.Printf("%-42s %9s %9s %9s %9s\n", "scenario", "p50", "p90", "p99", "max")
	r := mrand.New(mrand.NewPCG(5, 6)) //nolint:gosec // deterministic test data, not secrets
	for _, sc := range scenarios {
		times := make([]time.Duration, 0, b.o.runs)
		var totals int64
		for i := 0; i < b.o.runs+5; i++ {
			p, q := sc.next(r)
			req := httptest.NewRequest(http.MethodGet, "/logistics/v1/loads?"+q, nil)
			req.Header.Set("Authorization", "Bearer "+b.token(p))
			rec := httptest.NewRecorder()
			t0 := time.Now()
			b.srv.Engine.ServeHTTP(rec, req)
			d := time.Since(t0)
			if rec.Code != http.StatusOK {
				return fmt.Errorf("%s: %d %s", sc.name, rec.Code, rec.Body.String())
			}
			if i >= 5 {
				times = append(times, d)
				n, _ := strconv.ParseInt(rec.Header().Get("X-Total-Count"), 10, 64)
				totals += n
			}
		}
		slices.Sort(times)
		pct := func(q float64) time.Duration {
			return times[int(math.Ceil(q*float64(len(times))))-1].Round(10 * time.Microsecond)
		}
		fmt.Printf("%-42s %9s %9s %9s %9s   (mean total %d)\n", sc.name, pct(0.5), pct(0.9), pct(0.99), times[len(times)-1].Round(10*time.Microsecond), totals/int64(len(times)))
	}
	// The plans PostgreSQL runs for the statements of one request per party,
	// as the store issues them (recorded on their way), with their execution
	// times: what the database spends, apart from the scheduling of a busy
	// machine that the wall times above include.
	rec := &recorder{}
	bdb.AddQueryHook(rec) //nolint:staticcheck // the running engine holds this *bun.DB: the hook must join it, not a copy
	for _, c := range []struct {
		name string
		p    auth.Principal
		q    string
	}{
		{"big organiser, last day", big, ago(24 * time.Hour)},
		{"big organiser, last week, page 2", big, ago(7*24*time.Hour) + "&offset=20"},
		{"carrier, last day", org(b.carrier(7)), ago(24 * time.Hour)},
		{"driver, last week", auth.Principal{UserID: b.driver(7), OrgID: "org-" + b.driver(7)}, ago(7 * 24 * time.Hour)},
	} {
		req := httptest.NewRequest(http.MethodGet, "/logistics/v1/loads?"+c.q, nil)
		req.Header.Set("Authorization", "Bearer "+b.token(c.p))
		rec.start()
		b.srv.Engine.ServeHTTP(httptest.NewRecorder(), req)
		stmts := rec.stop()
		fmt.Printf("plans of a catch-up (%s): %d statements\n", c.name, len(stmts))
		for _, q := range stmts {
			var plan []string
			if err := bdb.NewRaw("EXPLAIN (ANALYZE, BUFFERS) "+q).Scan(ctx, &plan); err != nil {
				return err
			}
			for _, l := range plan {
				if strings.Contains(l, "Scan") || strings.Contains(l, "Execution Time") || strings.Contains(l, "Append") {
					fmt.Println("  " + l)
				}
			}
		}
	}
	return nil
}

// recorder keeps the SELECT statements the database runs while on.
type recorder struct {
	mu    sync.Mutex
	on    bool
	stmts []string
}

func (r *recorder) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (r *recorder) AfterQuery(_ context.Context, ev *bun.QueryEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on && strings.HasPrefix(ev.Query, "SELECT") {
		r.stmts = append(r.stmts, ev.Query)
	}
}

func (r *recorder) start() {
	r.mu.Lock()
	r.on, r.stmts = true, nil
	r.mu.Unlock()
}

func (r *recorder) stop() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return r.stmts
}
