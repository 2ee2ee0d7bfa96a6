package system_test

import (
	"bufio"
	"context"
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
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
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
// over the Redis bus and over the PostgreSQL LISTEN/NOTIFY bus): from the
// start of the POST to the event's arrival at the client.
func BenchmarkCrossReplicaLatency(b *testing.B) {
	const users, samples = 50, 400
	for _, busName := range []string{"redis", "postgres"} {
		b.Run(busName, func(b *testing.B) {
			db := testkit.DB(b, testkit.Postgres)
			prefix := testkit.UniqueName("agritrade-latency:") + ":"
			mk := func() (*testkit.Server, string) {
				s := testkit.NewServer(b, db, func(p *app.Platform) []module.Module {
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
			var mu sync.Mutex
			sent := map[string]time.Time{}
			lat := make(chan time.Duration, samples)
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
					for sc.Scan() {
						line := sc.Text()
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
						mu.Unlock()
						if ok {
							lat <- at.Sub(t0)
						}
					}
				}()
			}
			time.Sleep(200 * time.Millisecond) // every stream registered
			sender := auth.Principal{UserID: "lat-sender", Name: "Sender"}
			tok := a.Token(sender)
			for i := 0; i < b.N; i++ {
				got := make([]time.Duration, 0, samples)
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
						got = append(got, d)
					case <-time.After(5 * time.Second):
						b.Fatalf("message %s never reached replica B's stream", key)
					}
				}
				slices.Sort(got)
				pct := func(q float64) time.Duration {
					return got[int(math.Ceil(q*float64(len(got))))-1].Round(10 * time.Microsecond)
				}
				fmt.Printf("message on replica A -> client of replica B (PostgreSQL, %s bus), %d messages: p50 %s  p90 %s  p99 %s  max %s\n",
					busName, samples, pct(0.5), pct(0.9), pct(0.99), got[len(got)-1].Round(10*time.Microsecond))
				b.ReportMetric(float64(pct(0.99))/1e6, "ms-p99")
			}
		})
	}
}
