package filestore_test

import (
	"context"
	"net"
	"testing"

	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/filestore/s3test"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// TestS3Unavailable classifies what a real MinIO and the real client answer:
// an endpoint that refuses connections is unavailability; a missing bucket and
// wrong credentials are misconfiguration (500, to be noticed), not an outage.
func TestS3Unavailable(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	if _, err := srv.Client.StatObject(ctx, "agritrade-no-such-bucket", "k", minio.StatObjectOptions{}); err == nil || filestore.IsUnavailable(err) {
		t.Fatalf("missing bucket: %v", err)
	}
	wrong, err := minio.New(srv.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s3test.AccessKey, "not-the-secret", "")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.BucketExists(ctx, "anything"); err == nil || filestore.IsUnavailable(err) {
		t.Fatalf("wrong credentials: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	if _, err := filestore.NewS3(ctx, filestore.S3Options{Endpoint: addr, Bucket: "agritrade-down", AccessKey: "a", SecretKey: "s"}); err == nil || !filestore.IsUnavailable(err) {
		t.Fatalf("refused: %v", err)
	}
}
