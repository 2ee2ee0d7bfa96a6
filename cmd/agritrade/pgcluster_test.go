package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agritrade/api/platform/db"
)

// pgBinEnv points at a PostgreSQL bin directory (initdb, postgres); the
// default is the newest /usr/lib/postgresql/*/bin.
const pgBinEnv = "AGRITRADE_TEST_PG_BIN"

// cluster is a PostgreSQL server of the test's own, on a temporary data
// directory and an uncommon port, that the test stops and starts at will.
type cluster struct {
	t    *testing.T
	bin  string
	dir  string
	port int
	cred *syscall.Credential
	cmd  *exec.Cmd
	logs *syncBuffer
	DSN  string
}

func pgBin() string {
	if dir := os.Getenv(pgBinEnv); dir != "" {
		return dir
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	return ""
}

// startCluster initialises and starts a cluster, or skips the test when no
// PostgreSQL binaries are installed. Running as root, the server runs as the
// postgres user (initdb refuses root).
func startCluster(t *testing.T) *cluster {
	t.Helper()
	bin := pgBin()
	if bin == "" {
		t.Skipf("PostgreSQL outage tests skipped: no initdb under /usr/lib/postgresql/*/bin (install postgresql, or set %s)", pgBinEnv)
	}
	dir, err := os.MkdirTemp("", "agritrade-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// The server's user must reach its data directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, bin: bin, dir: dir, logs: &syncBuffer{}}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("PostgreSQL outage tests skipped: running as root and there is no postgres user to run the server as (%v)", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		for _, p := range []string{dir, data} {
			if err := os.Chown(p, int(uid), int(gid)); err != nil {
				t.Fatal(err)
			}
		}
	}
	initdb := c.command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.port = ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	c.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
	c.Start()
	t.Cleanup(func() { c.Stop(syscall.SIGQUIT) })
	return c
}

func (c *cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// Start runs the server and waits until it accepts connections.
func (c *cluster) Start() {
	c.t.Helper()
	if c.cmd != nil {
		c.t.Fatal("cluster already running")
	}
	c.cmd = c.command(filepath.Join(c.bin, "postgres"), "-D", filepath.Join(c.dir, "data"), "-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+c.dir, "-c", "fsync=off",
		"-c", "max_connections=200", "-c", "shared_buffers=32MB")
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	if err := c.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		bdb, err := db.Open(context.Background(), c.DSN, db.Options{MaxOpenConns: 1})
		if err == nil {
			_ = bdb.Close()
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("PostgreSQL did not start: %v\n%s", err, tail(c.logs.String()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop shuts the server down: SIGINT is PostgreSQL's fast shutdown (sessions
// are ended with 57P01, new ones refused with 57P03), SIGQUIT its immediate
// shutdown (as a crash: recovery runs at the next start).
func (c *cluster) Stop(sig syscall.Signal) {
	if c.cmd == nil {
		return
	}
	_ = c.cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
	c.cmd = nil
}

// CreateDatabase makes a database on the cluster and returns its DSN.
func (c *cluster) CreateDatabase(name string) string {
	c.t.Helper()
	bdb, err := db.Open(context.Background(), c.DSN, db.Options{MaxOpenConns: 1})
	if err != nil {
		c.t.Fatal(err)
	}
	defer func() { _ = bdb.Close() }()
	if _, err := bdb.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		c.t.Fatal(err)
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, name)
}
