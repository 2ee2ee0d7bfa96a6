package app_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/filestore/s3test"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	s3test.Stop()
	os.Exit(code)
}

// TestReadinessFollowsEveryDependency runs the platform over a real MinIO and a
// real Redis, each behind a proxy the test cuts: /readyz answers 503 naming
// the dependency while it is away and 200 again once it is back, without a
// restart; a file read while the store is away answers 503, not 500.
func TestReadinessFollowsEveryDependency(t *testing.T) {
	redisURL := os.Getenv("AGRITRADE_TEST_REDIS_URL")
	if redisURL == "" {
		t.Skip("AGRITRADE_TEST_REDIS_URL is not set")
	}
	minio := s3test.Start(t)
	bucket := minio.NewBucket(t)
	s3 := testkit.NewProxy(t, minio.Endpoint)
	u, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	redis := testkit.NewProxy(t, u.Host)
	u.Host = redis.Addr
	srv := testkit.NewServer(t, testkit.DB(t, testkit.SQLite), func(*app.Platform) []module.Module { return nil }, testkit.Options{
		Configure: func(c *config.Config) {
			c.Files.Backend = "s3"
			c.Files.S3 = config.S3{Endpoint: s3.Addr, Bucket: bucket, AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey, Region: "us-east-1"}
			c.Cache.Backend, c.Cache.Prefix, c.Redis.URL = "redis", "agritrade-test-readiness:", u.String()
		},
	})
	ready := func(want int, down string) {
		t.Helper()
		r := srv.Do(testkit.Request{Method: http.MethodGet, Path: "/readyz"})
		if r.Status != want {
			t.Fatalf("/readyz %d, want %d: %s", r.Status, want, r.Body)
		}
		if want == http.StatusOK {
			if m := r.Map(t); !strings.Contains(string(r.Body), `"redis":"ok"`) || m["status"] != "ok" {
				t.Fatalf("/readyz %s", r.Body)
			}
			return
		}
		if e := r.Error(t); e.Code != "unavailable" || e.Message != down+" not ready" || r.Header.Get("Retry-After") == "" {
			t.Fatalf("/readyz %d %v %s", r.Status, r.Header, r.Body)
		}
	}
	ready(http.StatusOK, "")

	ctx := context.Background()
	owner := &auth.Principal{UserID: "u1", OrgID: "o1", Orgs: []string{"o1"}}
	rec, err := srv.Platform.Files.Put(ctx, owner, filestore.PutInput{Bucket: filestore.BucketFiles, Type: "contract", Name: "a.pdf", OrganisationID: "o1",
		Body: bytes.NewReader([]byte("%PDF-1.4\n% a document\n"))})
	if err != nil {
		t.Fatal(err)
	}

	s3.Cut()
	ready(http.StatusServiceUnavailable, "files")
	_, err = srv.Platform.Files.Read(ctx, rec, 0, -1)
	if e, ok := apierr.As(err); !ok || e.Code != apierr.CodeUnavailable || e.Message != "the file store is unavailable" {
		t.Fatalf("read while the store is away: %v", err)
	}
	s3.Restore(t)
	ready(http.StatusOK, "")

	redis.Cut()
	ready(http.StatusServiceUnavailable, "redis")
	if _, _, err := srv.Platform.Cache.Get(ctx, "k"); err == nil || apierr.Classify(err, app.Classifiers()).Code != apierr.CodeUnavailable {
		t.Fatalf("cache read while Redis is away: %v", err)
	}
	redis.Restore(t)
	ready(http.StatusOK, "")
}
