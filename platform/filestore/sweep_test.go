package filestore_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/filestore/s3test"
	"github.com/minio/minio-go/v7"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

// runSweeper runs the service's sweeper loop until the test ends.
func runSweeper(t *testing.T, s *filestore.Service) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = s.RunSweeper(ctx)
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// eventually polls cond until it holds, failing the test after a generous
// bound (a hung sweeper, not a slow one).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// entries counts the log entries at level whose message is msg.
func entries(hook *logtest.Hook, level logrus.Level, msg string) []*logrus.Entry {
	var out []*logrus.Entry
	for _, e := range hook.AllEntries() {
		if e.Level == level && e.Message == msg {
			out = append(out, e)
		}
	}
	return out
}

// writeTemp leaves a partial upload of n bytes in the store's temporary folder, last written at mtime.
func writeTemp(t *testing.T, root, name string, n int, mtime time.Time) string {
	t.Helper()
	p := filepath.Join(root, ".tmp", name)
	if err := os.WriteFile(p, bytes.Repeat([]byte("x"), n), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return p
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestLocalSweeperRemovesAbandonedUploadsWhileRunning runs the sweeper loop
// with a short interval over a local store holding an abandoned partial
// upload and a fresh one: only the abandoned one goes, and is logged with
// its count and bytes; one abandoned after the loop started goes too, at a
// later tick. A failing store (its temporary folder gone) is a warning, and
// the sweep works again at the next tick once the folder is back.
func TestLocalSweeperRemovesAbandonedUploadsWhileRunning(t *testing.T) {
	local, err := filestore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := local.Root()
	old := writeTemp(t, root, "upload-old", 1000, time.Now().Add(-2*time.Hour))
	fresh := writeTemp(t, root, "upload-fresh", 500, time.Now())
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	s := filestore.New(nil, local, filestore.Options{Log: log, SweepInterval: 10 * time.Millisecond, SweepAge: time.Hour})
	runSweeper(t, s)

	eventually(t, "the abandoned upload is removed", func() bool { return !exists(old) })
	// Its lines follow the removal.
	eventually(t, "the removal is logged", func() bool { return len(entries(hook, logrus.InfoLevel, "removed abandoned uploads")) > 0 })
	infos := entries(hook, logrus.InfoLevel, "removed abandoned uploads")
	if len(infos) != 1 || infos[0].Data["removed"] != 1 || infos[0].Data["bytes"] != int64(1000) {
		t.Fatalf("info logs %v, want one with removed=1 bytes=1000", infos)
	}

	// Abandoned while the loop runs: gone at a later tick, the fresh one kept throughout.
	later := writeTemp(t, root, "upload-later", 3000, time.Now().Add(-90*time.Minute))
	eventually(t, "the upload abandoned later is removed", func() bool { return !exists(later) })
	if !exists(fresh) {
		t.Fatal("the fresh partial upload was removed")
	}
	// The sweep logs after it removes: the later upload can be gone a moment
	// before its sweep's line is written.
	eventually(t, "a debug line per sweep (at least 2)", func() bool {
		return len(entries(hook, logrus.DebugLevel, "swept abandoned uploads")) >= 2
	})

	// The store fails: warnings, and the loop keeps going.
	moved := filepath.Join(root, "tmp-away")
	if err := os.Rename(filepath.Join(root, ".tmp"), moved); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a failed sweep is logged as a warning", func() bool {
		return len(entries(hook, logrus.WarnLevel, "sweeping abandoned uploads failed; trying again at the next tick")) > 0
	})
	if err := os.Rename(moved, filepath.Join(root, ".tmp")); err != nil {
		t.Fatal(err)
	}
	afterOutage := writeTemp(t, root, "upload-after-outage", 10, time.Now().Add(-3*time.Hour))
	eventually(t, "the sweep works again after the store is back", func() bool { return !exists(afterOutage) })
	if !exists(filepath.Join(root, ".tmp", "upload-fresh")) {
		t.Fatal("the fresh partial upload was removed")
	}
}

// TestS3SweepAbortsAbandonedMultipartUploads starts multipart uploads on a
// real MinIO and never completes them: a sweep with a long max age keeps
// them (they might still be moving), one with a max age of ~0 aborts every
// one under the store's prefix and leaves alone another deployment's upload
// outside it.
func TestS3SweepAbortsAbandonedMultipartUploads(t *testing.T) {
	srv := s3test.Start(t)
	bucket := srv.NewBucket(t)
	ctx := context.Background()
	store, err := filestore.NewS3(ctx, filestore.S3Options{
		Endpoint: srv.Endpoint, Bucket: bucket, AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey, Prefix: "tenant",
	})
	if err != nil {
		t.Fatal(err)
	}
	core := minio.Core{Client: srv.Client}
	start := func(key string, parts int) string {
		t.Helper()
		id, err := core.NewMultipartUpload(ctx, bucket, key, minio.PutObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= parts; i++ {
			part := bytes.Repeat([]byte{byte(i)}, filestore.MinPartSize)
			if _, err := core.PutObjectPart(ctx, bucket, key, id, i, bytes.NewReader(part), int64(len(part)), minio.PutObjectPartOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	incomplete := func(prefix string) []string {
		t.Helper()
		var keys []string
		// MinIO lists by whole object names only: list all, filter here.
		for up := range srv.Client.ListIncompleteUploads(ctx, bucket, "", true) {
			if up.Err != nil {
				t.Fatal(up.Err)
			}
			if strings.HasPrefix(up.Key, prefix) {
				keys = append(keys, up.Key)
			}
		}
		return keys
	}
	start("tenant/files/2026/01/abandoned-a", 2)
	start("tenant/images/2026/01/abandoned-b", 1)
	other := start("other/files/2026/01/not-ours", 1)
	t.Cleanup(func() { _ = core.AbortMultipartUpload(ctx, bucket, "other/files/2026/01/not-ours", other) })

	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	keep := filestore.New(nil, store, filestore.Options{Log: log, SweepAge: 24 * time.Hour})
	got, err := keep.SweepUploads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Count != 0 || len(incomplete("tenant/")) != 2 {
		t.Fatalf("a sweep with a long max age removed %+v; left %v", got, incomplete("tenant/"))
	}

	// The sweeper loop with a max age of ~0 aborts both.
	runSweeper(t, filestore.New(nil, store, filestore.Options{Log: log, SweepInterval: 10 * time.Millisecond, SweepAge: time.Nanosecond}))
	eventually(t, "the abandoned uploads under the prefix are aborted", func() bool { return len(incomplete("tenant/")) == 0 })
	var removed int
	var bytesRemoved int64
	eventually(t, "the removal is logged", func() bool {
		removed, bytesRemoved = 0, 0
		for _, e := range entries(hook, logrus.InfoLevel, "removed abandoned uploads") {
			removed += e.Data["removed"].(int)
			bytesRemoved += e.Data["bytes"].(int64)
		}
		return removed == 2
	})
	if bytesRemoved != 3*filestore.MinPartSize {
		t.Fatalf("logged %d bytes removed, want the %d of the parts", bytesRemoved, 3*filestore.MinPartSize)
	}
	if left := incomplete("other/"); len(left) != 1 {
		t.Fatalf("another prefix's uploads after the sweep: %v, want the one kept", left)
	}
	// Another replica sweeping the same uploads again finds nothing, without error.
	again := filestore.New(nil, store, filestore.Options{Log: log, SweepAge: time.Nanosecond})
	if got, err := again.SweepUploads(ctx); err != nil || got.Count != 0 {
		t.Fatalf("second sweep: %+v, %v", got, err)
	}
}

// TestSweepAgeCoversTheLongestLiveUpload: the local store sweeps at
// files.tmp_max_age (its files show each write); the S3 store, whose uploads
// show only when they began, never sweeps sooner than the longest upload the
// body deadlines let through, nor before a resumable upload's multipart
// upload may still be written (files.resumable_ttl plus the longest upload),
// and uses files.tmp_max_age when it is longer still.
func TestSweepAgeCoversTheLongestLiveUpload(t *testing.T) {
	cfg := config.Default()
	if got := filestore.SweepAge(cfg); got != time.Hour {
		t.Fatalf("local sweep age %s, want files.tmp_max_age", got)
	}
	cfg.Files.Backend = "s3"
	// 100 MiB (+1 MiB of form) at 1 KiB/s after a minute of grace, plus slack.
	longest := time.Minute + 101*1024*time.Second
	if got := filestore.SweepAge(cfg); got <= cfg.Files.ResumableTTL+longest {
		t.Fatalf("s3 sweep age %s, want more than files.resumable_ttl %s + the longest live upload %s", got, cfg.Files.ResumableTTL, longest)
	}
	cfg.Files.TmpMaxAge = 96 * time.Hour
	if got := filestore.SweepAge(cfg); got != 96*time.Hour {
		t.Fatalf("s3 sweep age %s, want the larger files.tmp_max_age", got)
	}
	cfg.Files.TmpMaxAge = time.Hour
	cfg.HTTP.BodyMinRate = 0
	if got, want := filestore.SweepAge(cfg), cfg.Files.ResumableTTL+10*time.Minute; got != want {
		t.Fatalf("s3 sweep age without a rate bound %s, want files.resumable_ttl + slack %s", got, want)
	}
	cfg.Files.ResumableTTL = time.Minute
	if got := filestore.SweepAge(cfg); got != time.Hour {
		t.Fatalf("s3 sweep age, short resumable_ttl, no rate bound: %s, want files.tmp_max_age", got)
	}
}
