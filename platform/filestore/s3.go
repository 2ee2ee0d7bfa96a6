package filestore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// MinPartSize is the smallest multipart part S3 accepts (except the last).
const MinPartSize = 5 << 20

// S3Options locate a bucket of an S3-compatible store.
type S3Options struct {
	Endpoint  string // host:port, without scheme
	Bucket    string
	AccessKey string
	SecretKey string
	UseSSL    bool
	Region    string
	// Prefix is prepended to every key ("" or ending in "/").
	Prefix string
	// PartSize is the multipart part size, which is also the memory one
	// upload holds: uploads of unknown length are sent in parts of this size.
	PartSize uint64
	// Transport replaces the HTTP transport (tests, proxies).
	Transport http.RoundTripper
}

// S3 keeps objects in a bucket of an S3-compatible store (AWS S3, MinIO, Ceph RGW...).
type S3 struct {
	client   *minio.Client
	core     minio.Core
	bucket   string
	prefix   string
	partSize uint64
}

// NewS3 connects to the store and creates the bucket when it does not exist.
func NewS3(ctx context.Context, o S3Options) (*S3, error) {
	if o.Endpoint == "" || o.Bucket == "" {
		return nil, fmt.Errorf("files.s3.endpoint and files.s3.bucket are required for the s3 backend")
	}
	endpoint := strings.TrimPrefix(strings.TrimPrefix(o.Endpoint, "https://"), "http://")
	client, err := minio.New(endpoint, &minio.Options{
		Creds:     credentials.NewStaticV4(o.AccessKey, o.SecretKey, ""),
		Secure:    o.UseSSL || strings.HasPrefix(o.Endpoint, "https://"),
		Region:    o.Region,
		Transport: o.Transport,
	})
	if err != nil {
		return nil, fmt.Errorf("files.s3: %w", err)
	}
	if o.PartSize < MinPartSize {
		o.PartSize = MinPartSize
	}
	if o.Prefix != "" && !strings.HasSuffix(o.Prefix, "/") {
		o.Prefix += "/"
	}
	s := &S3{client: client, core: minio.Core{Client: client}, bucket: o.Bucket, prefix: o.Prefix, partSize: o.PartSize}
	exists, err := client.BucketExists(ctx, o.Bucket)
	if err != nil {
		return nil, fmt.Errorf("files.s3: check bucket %s: %w", o.Bucket, err)
	}
	if !exists {
		// Replicas starting together race to create it: losing is fine.
		if err := client.MakeBucket(ctx, o.Bucket, minio.MakeBucketOptions{Region: o.Region}); err != nil {
			if code := minio.ToErrorResponse(err).Code; code != "BucketAlreadyOwnedByYou" && code != "BucketAlreadyExists" {
				return nil, fmt.Errorf("files.s3: create bucket %s: %w", o.Bucket, err)
			}
			if exists, xerr := client.BucketExists(ctx, o.Bucket); xerr != nil || !exists {
				return nil, fmt.Errorf("files.s3: create bucket %s: %w", o.Bucket, err)
			}
		}
	}
	return s, nil
}

// Client exposes the underlying client (tests inspect the bucket with it).
func (s *S3) Client() *minio.Client { return s.client }

// Bucket is the bucket name.
func (s *S3) Bucket() string { return s.bucket }

// Put streams r as a multipart upload of unknown length: one part buffer in
// memory, the object completed only at io.EOF, the upload aborted when r fails.
func (s *S3) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	info, err := s.client.PutObject(ctx, s.bucket, s.prefix+key, r, -1, minio.PutObjectOptions{
		PartSize:    s.partSize,
		ContentType: TypeOctet,
	})
	if err != nil {
		return 0, err
	}
	return info.Size, nil
}

// Open issues a ranged GET at once, so that a missing object is known before
// the caller writes response headers.
func (s *S3) Open(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if length == 0 {
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	var opts minio.GetObjectOptions
	var err error
	switch {
	case length > 0:
		err = opts.SetRange(offset, offset+length-1)
	case offset > 0:
		err = opts.SetRange(offset, 0)
	}
	if err != nil {
		return nil, err
	}
	body, _, _, err := s.core.GetObject(ctx, s.bucket, s.prefix+key, opts)
	if err != nil {
		if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
			return nil, ErrNotExist
		}
		return nil, err
	}
	return body, nil
}

// Delete removes the object.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return s.client.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{})
}

// Ping checks that the bucket answers.
func (s *S3) Ping(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("bucket %s does not exist", s.bucket)
	}
	return nil
}
