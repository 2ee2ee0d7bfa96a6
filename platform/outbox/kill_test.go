package outbox_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/outbox"
	"github.com/agritrade/api/platform/outbox/outboxtest"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// The kill test re-executes this test binary as a child process that runs the
// real platform (app.Open, migrations, app.Server.Start with its outbox
// dispatcher) over a shared database, and SIGKILLs it at the worst moments.
const (
	childEnv        = "AGRITRADE_OUTBOX_KILL_CHILD" // commit | dispatch | restart
	childDSNEnv     = "AGRITRADE_OUTBOX_KILL_DSN"
	childWebhookEnv = "AGRITRADE_OUTBOX_KILL_WEBHOOK"
	childDataEnv    = "AGRITRADE_OUTBOX_KILL_DATA"
	childLease      = 2 * time.Second
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		if err := runChild(mode); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild is the process under test. commit: enqueue one event and commit
// without any dispatcher running (the process dies before delivery starts).
// dispatch: start the server (dispatcher included), then enqueue and commit
// (the process dies while the dispatcher is delivering). restart: start the
// server and deliver whatever is due, until SIGTERM.
func runChild(mode string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	cfg := config.Default()
	cfg.DB.DSN = os.Getenv(childDSNEnv)
	cfg.DataDir = os.Getenv(childDataEnv)
	cfg.Auth.Secret = "kill-test-secret"
	cfg.Notify.Webhook.URL, cfg.Notify.Webhook.Secret = os.Getenv(childWebhookEnv), secret
	cfg.Notify.Lease, cfg.Notify.PollInterval, cfg.Notify.BackoffBase = childLease, 50*time.Millisecond, 50*time.Millisecond
	p, err := app.Open(ctx, cfg, app.Options{LogOutput: os.Stderr})
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.MigrateUp(ctx, nil); err != nil {
		return err
	}
	srv, err := app.NewServer(p, "kill-child")
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	if mode != "commit" {
		if err := srv.Start(ctx, &wg); err != nil {
			return err
		}
	}
	if mode == "commit" || mode == "dispatch" {
		typ := "kill." + mode
		err := db.InTx(ctx, p.DB, func(ctx context.Context, tx bun.Tx) error {
			return outbox.Enqueue(ctx, tx, outbox.Event{Type: typ, Recipients: []string{"user-b"}, Subject: "survives SIGKILL", Data: map[string]string{"mode": mode}})
		})
		if err != nil {
			return err
		}
		recs, err := outbox.List(ctx, p.DB, outbox.Filter{Type: typ, Limit: 1})
		if err != nil || len(recs) != 1 {
			return fmt.Errorf("committed event not found (%d records): %w", len(recs), err)
		}
		fmt.Printf("COMMITTED %s\n", recs[0].ID)
	}
	fmt.Println("READY")
	<-ctx.Done()
	wg.Wait()
	return nil
}

type child struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *bytes.Buffer
}

func startChild(t *testing.T, mode, dsn, dataDir, webhook string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childDSNEnv+"="+dsn, childWebhookEnv+"="+webhook, childDataEnv+"="+dataDir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 8), stderr: &bytes.Buffer{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	return c
}

// line waits for a stdout line starting with prefix and answers the rest.
func (c *child) line(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				_ = c.cmd.Wait()
				t.Fatalf("child ended before %q; stderr:\n%s", prefix, c.stderr.String())
			}
			if strings.HasPrefix(l, prefix) {
				return strings.TrimSpace(strings.TrimPrefix(l, prefix))
			}
		case <-timeout:
			t.Fatalf("child did not print %q; stderr:\n%s", prefix, c.stderr.String())
		}
	}
}

func (c *child) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := c.cmd.Wait()
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child was not killed by SIGKILL: %v", err)
	}
}

func (c *child) terminate(t *testing.T) {
	t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child did not stop cleanly on SIGTERM: %v; stderr:\n%s", err, c.stderr.String())
	}
}

// TestKillBetweenCommitAndDelivery: a process commits a notification and is
// SIGKILLed before (or during) its delivery; a restarted process delivers it.
func TestKillBetweenCommitAndDelivery(t *testing.T) {
	for _, d := range []testkit.Dialect{testkit.SQLite, testkit.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			dsn := "sqlite://" + filepath.Join(t.TempDir(), "kill.db")
			if d == testkit.Postgres {
				dsn = testkit.PostgresDSN(t)
			}
			dataDir := t.TempDir()
			recv := outboxtest.NewReceiver(t, secret)
			check, err := db.Open(context.Background(), dsn, db.Options{MaxOpenConns: 2})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = check.Close() })

			t.Run("killed after commit, before any delivery", func(t *testing.T) {
				c := startChild(t, "commit", dsn, dataDir, recv.URL)
				id := c.line(t, "COMMITTED ")
				c.kill(t)
				r := record(t, check, id)
				if r.Status != outbox.StatusPending || r.Attempts != 0 || len(recv.Deliveries()) != 0 {
					t.Fatalf("after the kill: %+v, deliveries %d", r, len(recv.Deliveries()))
				}
				start := time.Now()
				restarted := startChild(t, "restart", dsn, dataDir, recv.URL)
				restarted.line(t, "READY")
				if got := recv.WaitAccepted(t, 1, 30*time.Second); got[id] != 1 {
					t.Fatalf("accepted %v, want %s once", got, id)
				}
				t.Logf("event %s committed by a SIGKILLed process was delivered %v after the restart", id, time.Since(start).Round(time.Millisecond))
				r = waitStatus(t, check, id, outbox.StatusDelivered, 10*time.Second)
				if r.Attempts != 1 {
					t.Fatalf("record %+v", r)
				}
				restarted.terminate(t)
			})

			t.Run("killed during delivery", func(t *testing.T) {
				held := recv.Hold()
				before := len(recv.Deliveries())
				c := startChild(t, "dispatch", dsn, dataDir, recv.URL)
				id := c.line(t, "COMMITTED ")
				select {
				case got := <-held:
					if got != id {
						t.Fatalf("held delivery of %s, want %s", got, id)
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("the child's dispatcher never called the webhook; stderr:\n%s", c.stderr.String())
				}
				c.kill(t) // the webhook request is in flight; the claim is held by a dead process
				r := record(t, check, id)
				if r.Status != outbox.StatusPending || r.Attempts != 1 || r.ClaimedUntil == nil {
					t.Fatalf("after the kill: %+v", r)
				}
				recv.Release()
				start := time.Now()
				restarted := startChild(t, "restart", dsn, dataDir, recv.URL)
				restarted.line(t, "READY")
				deadline := time.Now().Add(30 * time.Second)
				for recv.Accepted()[id] == 0 {
					if time.Now().After(deadline) {
						t.Fatalf("not delivered after the restart; stderr:\n%s", restarted.stderr.String())
					}
					time.Sleep(20 * time.Millisecond)
				}
				t.Logf("event %s whose delivery was cut by SIGKILL was delivered %v after the restart (claim lease %v)", id, time.Since(start).Round(time.Millisecond), childLease)
				r = waitStatus(t, check, id, outbox.StatusDelivered, 10*time.Second)
				if r.Attempts != 2 || recv.Accepted()[id] != 1 || len(recv.Deliveries()) != before+1 {
					t.Fatalf("record %+v, accepted %v", r, recv.Accepted())
				}
				restarted.terminate(t)
			})
		})
	}
}
