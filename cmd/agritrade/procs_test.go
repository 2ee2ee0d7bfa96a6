package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The fault tests drive real `agritrade` processes (the binary TestMain
// builds): several at once, killed with SIGKILL, or serving while their
// database goes away. child is one of them.
type child struct {
	name    string
	cmd     *exec.Cmd
	logs    *syncBuffer
	started time.Time
	addr    chan string // the listen address, once
	exited  chan struct{}
	err     error // the exit error, once exited is closed
	base    string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// spawn starts `agritrade args...` with the environment plus env; it is
// killed when the test ends if still running.
func spawn(t *testing.T, name string, env []string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), append([]string{"AGRITRADE_HTTP_ADDR=127.0.0.1:0", "AGRITRADE_LOG_FORMAT=json"}, env...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{name: name, cmd: cmd, logs: &syncBuffer{}, addr: make(chan string, 1), exited: make(chan struct{})}
	cmd.Stderr = c.logs
	c.started = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			_, _ = c.logs.Write(append(sc.Bytes(), '\n'))
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				c.addr <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		c.err = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() { c.kill() })
	return c
}

// ready waits until the process answers /readyz 200 and returns how long that
// took since it was started; an error when it exits or the time runs out.
func (c *child) ready(timeout time.Duration) (time.Duration, error) {
	deadline := time.After(timeout)
	select {
	case addr := <-c.addr:
		c.base = "http://" + addr
	case <-c.exited:
		return 0, fmt.Errorf("%s exited before listening (%w):\n%s", c.name, c.err, tail(c.logs.String()))
	case <-deadline:
		return 0, fmt.Errorf("%s did not listen within %v:\n%s", c.name, timeout, tail(c.logs.String()))
	}
	client := &http.Client{Timeout: 3 * time.Second}
	for {
		if res, err := client.Get(c.base + "/readyz"); err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return time.Since(c.started), nil
			}
		}
		select {
		case <-c.exited:
			return 0, fmt.Errorf("%s exited before it was ready (%w):\n%s", c.name, c.err, tail(c.logs.String()))
		case <-deadline:
			return 0, fmt.Errorf("%s not ready within %v:\n%s", c.name, timeout, tail(c.logs.String()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// wait waits for the process to end by itself and answers its exit error.
func (c *child) wait(timeout time.Duration) error {
	select {
	case <-c.exited:
		return c.err
	case <-time.After(timeout):
		return fmt.Errorf("%s still running after %v:\n%s", c.name, timeout, tail(c.logs.String()))
	}
}

// kill sends SIGKILL and waits for the end.
func (c *child) kill() {
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

// terminate sends SIGTERM and answers the exit error (nil for a clean stop).
func (c *child) terminate(timeout time.Duration) error {
	select {
	case <-c.exited:
		return c.err
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	return c.wait(timeout)
}

// tail is the end of a log, enough to see why a process failed.
func tail(s string) string {
	const keep = 6000
	if len(s) > keep {
		return "…" + s[len(s)-keep:]
	}
	return s
}

// do sends one request with a bearer token and answers status, headers and body.
func do(ctx context.Context, client *http.Client, method, url, token, contentType string, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b, err
}
