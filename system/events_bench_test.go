package system_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
	"github.com/uptrace/bun"
)

// The stream clients of BenchmarkEventStreamsMemory run in a child process
// (this test binary again), so that the server's process holds only its own
// side of the connections: its memory is what is measured, and the two sides
// together would not fit one process's file descriptor limit.
const (
	envClientsURL    = "AGRITRADE_STREAM_CLIENTS_URL"
	envClientsTokens = "AGRITRADE_STREAM_CLIENTS_TOKENS"
)

// TestStreamClientsHelper is the child process: it opens one raw stream per
// token, waits for each to answer 200, says "ready" and holds them until its
// stdin closes.
func TestStreamClientsHelper(t *testing.T) {
	base := os.Getenv(envClientsURL)
	if base == "" {
		t.Skip("the client side of BenchmarkEventStreamsMemory")
	}
	raw, err := os.ReadFile(os.Getenv(envClientsTokens))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(base)
	var conns []net.Conn
	buf := make([]byte, 512)
	for _, tok := range strings.Fields(string(raw)) {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(c, "GET /system/v1/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", u.Host, tok); err != nil {
			t.Fatal(err)
		}
		n, err := c.Read(buf)
		if err != nil || !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
			t.Fatalf("stream %d: %v %q", len(conns), err, buf[:n])
		}
		conns = append(conns, c)
	}
	fmt.Println("ready", len(conns))
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	for _, c := range conns {
		_ = c.Close()
	}
}

func memoryNow() (heapAndStacks uint64, rssKB int) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	raw, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			rssKB, _ = strconv.Atoi(strings.Fields(line)[1])
		}
	}
	return m.HeapInuse + m.StackInuse, rssKB
}

// BenchmarkEventStreamsMemory opens AGRITRADE_BENCH_STREAMS (default 10,000)
// event streams of distinct users on one replica and prints what they cost
// the replica's process: Go heap and stacks, and resident memory.
func BenchmarkEventStreamsMemory(b *testing.B) {
	n := 10_000
	if v := os.Getenv("AGRITRADE_BENCH_STREAMS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	db := testkit.DB(b, testkit.SQLite)
	s := testkit.NewServer(b, db, func(p *app.Platform) []module.Module {
		return []module.Module{system.New(p.Deps(system.Name))}
	}, testkit.Options{Configure: func(c *config.Config) {
		c.Events.MaxStreams = n + 10
		c.Log.Level = "warn"
	}})
	hs := httptest.NewServer(s.App.Engine)
	defer hs.Close()
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = s.Token(auth.Principal{UserID: "streamer-" + strconv.Itoa(i), OrgID: "org-" + strconv.Itoa(i%500), Orgs: []string{"org-" + strconv.Itoa(i%500)}})
	}
	file := b.TempDir() + "/tokens"
	if err := os.WriteFile(file, []byte(strings.Join(tokens, "\n")), 0o600); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		heap0, rss0 := memoryNow()
		cmd := exec.Command(os.Args[0], "-test.run=^TestStreamClientsHelper$", "-test.v")
		cmd.Env = append(os.Environ(), envClientsURL+"="+hs.URL, envClientsTokens+"="+file)
		stdin, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		ready := false
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready") {
				ready = true
				break
			}
			fmt.Println("client:", sc.Text())
		}
		if !ready {
			_ = cmd.Wait()
			b.Fatal("the client process did not open its streams")
		}
		opened := time.Since(start)
		for s.Platform.Events.Open() < n {
			time.Sleep(10 * time.Millisecond)
		}
		heap1, rss1 := memoryNow()
		fmt.Printf("%d open event streams on one replica (opened in %s):\n", n, opened.Round(time.Millisecond))
		fmt.Printf("  Go heap in use + stacks: %6.1f MiB more (%5.1f KiB per stream)\n", float64(heap1-heap0)/(1<<20), float64(heap1-heap0)/1024/float64(n))
		fmt.Printf("  resident memory (RSS):   %6.1f MiB more (%5.1f KiB per stream); process RSS %.1f MiB\n",
			float64(rss1-rss0)/1024, float64(rss1-rss0)/float64(n), float64(rss1)/1024)
		b.ReportMetric(float64(rss1-rss0)/1024, "MiB-RSS/streams")
		_ = stdin.Close()
		_ = cmd.Wait()
	}
}

// BenchmarkCrossReplicaLatency sends messages through replica A and times
// their arrival on the recipients' streams held by replica B (PostgreSQL,
// over the Redis bus and over the PostgreSQL LISTEN/NOTIFY bus). The replicas
// have pools of their own on one database, so that B hears of A's commits only
// over the bus, as in production. Printed apart: the whole (from the start of
// the POST to the event at the client), the POST's own time to its commit
// (A's announcement of the event: the request, the transaction, the commit),
// and what follows the commit (bus, B's read of the event, the write to the
// connection, the client's read).
func BenchmarkCrossReplicaLatency(b *testing.B) {
	const users, samples = 50, 400
	for _, busName := range []string{"redis", "postgres"} {
		b.Run(busName, func(b *testing.B) {
			dsn := testkit.PostgresDSN(b)
			prefix := testkit.UniqueName("agritrade-latency:") + ":"
			mk := func() (*testkit.Server, string) {
				pool, err := db.Open(context.Background(), dsn, db.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = pool.Close() })
				s := testkit.NewServer(b, pool, func(p *app.Platform) []module.Module {
					return []module.Module{system.New(p.Deps(system.Name))}
				}, testkit.Options{NoValidate: true, Configure: func(c *config.Config) {
					c.Bus.Backend = busName
					c.Redis.URL = testkit.RedisURL(b)
					c.Redis.Prefix = prefix
					c.Log.Level = "warn"
				}})
				hs := httptest.NewServer(s.App.Engine)
				b.Cleanup(hs.Close)
				return s, hs.URL
			}
			a, _ := mk()
			_, baseB := mk()
			stmts := &statementTimes{byKind: map[string][]time.Duration{}}
			a.Platform.DB.AddQueryHook(stmts) //nolint:staticcheck // the running server holds this *bun.DB: the hook must join it, not a copy
			var mu sync.Mutex
			committed := map[int64]time.Time{} // event id -> A's announcement (just after the commit)
			// A's bus hands A's own announcements to A's subscribers at once.
			a.Platform.Bus.Subscribe("events.committed", func(_ context.Context, payload []byte) {
				at := time.Now()
				var ann struct{ ID int64 }
				if json.Unmarshal(payload, &ann) == nil {
					mu.Lock()
					committed[ann.ID] = at
					mu.Unlock()
				}
			})
			sent := map[string]time.Time{}
			type arrival struct{ total, afterCommit time.Duration }
			lat := make(chan arrival, samples)
			for u := 0; u < users; u++ {
				p := auth.Principal{UserID: "lat-" + strconv.Itoa(u)}
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, baseB+"/system/v1/events", nil)
				req.Header.Set("Authorization", "Bearer "+a.Token(p))
				res, err := http.DefaultClient.Do(req)
				if err != nil || res.StatusCode != 200 {
					b.Fatalf("stream: %v %v", err, res)
				}
				b.Cleanup(func() { _ = res.Body.Close() })
				go func() {
					sc := bufio.NewScanner(res.Body)
					var id int64
					for sc.Scan() {
						line := sc.Text()
						if v, ok := strings.CutPrefix(line, "id: "); ok {
							id, _ = strconv.ParseInt(v, 10, 64)
							continue
						}
						if !strings.HasPrefix(line, "data: ") {
							continue
						}
						at := time.Now()
						i := strings.Index(line, `"message":"`)
						if i < 0 {
							continue
						}
						key := line[i+11:]
						key = key[:strings.IndexByte(key, '"')]
						mu.Lock()
						t0, ok := sent[key]
						c, known := committed[id]
						mu.Unlock()
						if ok {
							r := arrival{total: at.Sub(t0), afterCommit: -1}
							if known {
								r.afterCommit = at.Sub(c)
							}
							lat <- r
						}
					}
				}()
			}
			time.Sleep(200 * time.Millisecond) // every stream registered
			sender := auth.Principal{UserID: "lat-sender", Name: "Sender"}
			tok := a.Token(sender)
			for i := 0; i < b.N; i++ {
				var total, toCommit, afterCommit []time.Duration
				for k := 0; k < samples; k++ {
					key := "m" + strconv.Itoa(i) + "-" + strconv.Itoa(k)
					mu.Lock()
					sent[key] = time.Now()
					mu.Unlock()
					r := a.Do(testkit.Request{Method: http.MethodPost, Path: "/system/v1/conversations", Token: tok,
						JSON: map[string]any{"to": "lat-" + strconv.Itoa(k%users), "message": key}})
					if r.Status != 200 {
						b.Fatalf("send: %d %s", r.Status, r.Body)
					}
					select {
					case d := <-lat:
						total = append(total, d.total)
						if d.afterCommit >= 0 {
							afterCommit = append(afterCommit, d.afterCommit)
							toCommit = append(toCommit, d.total-d.afterCommit)
						}
					case <-time.After(5 * time.Second):
						b.Fatalf("message %s never reached replica B's stream", key)
					}
				}
				fmt.Printf("message on replica A -> client of replica B (PostgreSQL, %s bus), %d messages:\n", busName, samples)
				for _, row := range []struct {
					name string
					ts   []time.Duration
				}{
					{"POST start -> client (the whole)", total},
					{"POST start -> commit announced on A", toCommit},
					{"commit -> client of B (bus, fan-out, write)", afterCommit},
				} {
					fmt.Printf("  %-45s p50 %9s  p90 %9s  p99 %9s  max %9s  (%d)\n", row.name, quantile(row.ts, 0.5), quantile(row.ts, 0.9), quantile(row.ts, 0.99), quantile(row.ts, 1), len(row.ts))
				}
				fmt.Println("  statements of replica A while sending (where the POST's time goes):")
				stmts.print(5)
				b.ReportMetric(float64(quantile(total, 0.99))/1e6, "ms-p99")
				b.ReportMetric(float64(quantile(afterCommit, 0.99))/1e6, "ms-p99-after-commit")
			}
		})
	}
}

// statementTimes collects the durations of a database's statements by kind
// (the first words: the operation and the table).
type statementTimes struct {
	mu     sync.Mutex
	byKind map[string][]time.Duration
}

func (s *statementTimes) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (s *statementTimes) AfterQuery(_ context.Context, ev *bun.QueryEvent) {
	kind := ev.Query
	if f := strings.Fields(kind); len(f) > 4 {
		kind = strings.Join(f[:4], " ")
	}
	s.mu.Lock()
	s.byKind[kind] = append(s.byKind[kind], time.Since(ev.StartTime))
	s.mu.Unlock()
}

// print shows the n kinds of statement with the highest p99.
func (s *statementTimes) print(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kinds := make([]string, 0, len(s.byKind))
	for k := range s.byKind {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(x, y string) int { return int(quantile(s.byKind[y], 0.99) - quantile(s.byKind[x], 0.99)) })
	for _, k := range kinds[:min(n, len(kinds))] {
		ts := s.byKind[k]
		fmt.Printf("    %-60.60s n %5d  p50 %9s  p99 %9s  max %9s\n", k, len(ts), quantile(ts, 0.5), quantile(ts, 0.99), quantile(ts, 1))
	}
	s.byKind = map[string][]time.Duration{}
}

// quantile answers the q quantile of ts (0 when empty).
func quantile(ts []time.Duration, q float64) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	ts = slices.Clone(ts)
	slices.Sort(ts)
	return ts[max(0, int(math.Ceil(q*float64(len(ts))))-1)].Round(10 * time.Microsecond)
}
