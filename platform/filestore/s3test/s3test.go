// Package s3test starts a real S3-compatible server (MinIO) for tests of the
// S3 backend, on an uncommon port with a temporary data directory, and
// inspects its buckets.
//
// The binary is $AGRITRADE_TEST_MINIO_BIN, else "minio" in $(go env GOPATH)/bin,
// else "minio" on the PATH. Without one the test is skipped with a message
// saying how to get it (`go install github.com/minio/minio@latest`; .ci/run
// does it).
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agritrade/api/platform/config"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// BinEnv names the variable that points at the MinIO binary.
const BinEnv = "AGRITRADE_TEST_MINIO_BIN"

// Credentials of the test server.
const (
	AccessKey = "agritrade-test"
	SecretKey = "agritrade-test-secret"
)

// Server is a running MinIO.
type Server struct {
	Endpoint string // host:port
	Client   *minio.Client
}

// Binary returns the MinIO binary's path, or "" when there is none.
func Binary() string {
	if p := os.Getenv(BinEnv); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		return ""
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "minio")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p
	}
	return ""
}

var (
	shared     *Server
	sharedErr  error
	sharedOnce sync.Once
	sharedCmd  *exec.Cmd
	sharedDir  string
)

// Start returns the package's MinIO server, starting it on first use; it
// runs until Stop (call it from TestMain) or the test binary's end. Each test
// should use a bucket of its own (NewBucket).
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skipf("S3 tests skipped: no MinIO binary (set %s, or `go install github.com/minio/minio@latest` into $(go env GOPATH)/bin; .ci/run does this)", BinEnv)
	}
	sharedOnce.Do(func() { shared, sharedErr = start(bin) })
	if sharedErr != nil {
		t.Fatalf("start MinIO: %v", sharedErr)
	}
	return shared
}

// Stop ends the shared server, if one was started.
func Stop() {
	if sharedCmd != nil && sharedCmd.Process != nil {
		_ = sharedCmd.Process.Kill()
		_ = sharedCmd.Wait()
		sharedCmd = nil
	}
	if sharedDir != "" {
		_ = os.RemoveAll(sharedDir)
		sharedDir = ""
	}
}

func start(bin string) (*Server, error) {
	dir, err := os.MkdirTemp("", "agritrade-minio-")
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	console, err := freeAddr()
	if err != nil {
		return nil, err
	}
	// The MinIO binary the developer pointed at, with arguments of our own.
	cmd := exec.Command(bin, "server", "--quiet", "--address", addr, "--console-address", console, filepath.Join(dir, "data"))
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+AccessKey,
		"MINIO_ROOT_PASSWORD="+SecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
	)
	sharedDir = dir
	dieWithParent(cmd)
	logFile, err := os.Create(filepath.Join(dir, "minio.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sharedCmd = cmd
	client, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, "")})
	if err != nil {
		return nil, err
	}
	// Ready means the S3 API answers, which comes some time after the
	// process listens (until then it answers "Server not initialised yet").
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := client.ListBuckets(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "minio.log"))
			Stop()
			return nil, fmt.Errorf("MinIO at %s not ready after 30s (log: %s): %w", addr, log, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return &Server{Endpoint: addr, Client: client}, nil
}

// freeAddr picks a free port on the loopback interface (an uncommon one, chosen by the kernel).
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// NewBucket returns a fresh bucket name (created by the backend on open),
// removed with its objects when the test ends.
func (s *Server) NewBucket(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "test-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx := context.Background()
		for obj := range s.Client.ListObjects(ctx, name, minio.ListObjectsOptions{Recursive: true}) {
			if obj.Err == nil {
				_ = s.Client.RemoveObject(ctx, name, obj.Key, minio.RemoveObjectOptions{})
			}
		}
		_ = s.Client.RemoveBucket(ctx, name)
	})
	return name
}

// Configure points a configuration at bucket on this server.
func (s *Server) Configure(c *config.Config, bucket string) {
	c.Files.Backend = "s3"
	c.Files.S3.Endpoint = s.Endpoint
	c.Files.S3.Bucket = bucket
	c.Files.S3.AccessKey = AccessKey
	c.Files.S3.SecretKey = SecretKey
	c.Files.S3.UseSSL = false
}

// Objects lists every object in bucket, and every multipart upload still in
// progress (as "incomplete:<key>"): both must be empty after a refused upload.
func (s *Server) Objects(t testing.TB, bucket string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for obj := range s.Client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatalf("list %s: %v", bucket, obj.Err)
		}
		out = append(out, obj.Key)
	}
	for up := range s.Client.ListIncompleteUploads(ctx, bucket, "", true) {
		if up.Err != nil {
			t.Fatalf("list uploads of %s: %v", bucket, up.Err)
		}
		out = append(out, "incomplete:"+up.Key)
	}
	return out
}
