package filestore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

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

// Stat asks for the object's size (a HEAD request).
func (s *S3) Stat(ctx context.Context, key string) (int64, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	info, err := s.client.StatObject(ctx, s.bucket, s.prefix+key, minio.StatObjectOptions{})
	if err != nil {
		if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
			return 0, ErrNotExist
		}
		return 0, err
	}
	return info.Size, nil
}

// StartParts begins a multipart upload of key (parter).
func (s *S3) StartParts(ctx context.Context, key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return s.core.NewMultipartUpload(ctx, s.bucket, s.prefix+key, minio.PutObjectOptions{ContentType: TypeOctet})
}

// PutPart streams r (size bytes) as one part: the request's body is r itself,
// signed as it streams, never held in memory.
func (s *S3) PutPart(ctx context.Context, key, uploadID string, number int, r io.Reader, size int64) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	part, err := s.core.PutObjectPart(ctx, s.bucket, s.prefix+key, uploadID, number, r, size, minio.PutObjectPartOptions{})
	if err != nil {
		if minio.ToErrorResponse(err).Code == minio.NoSuchUpload {
			return "", ErrNoSuchUpload
		}
		return "", err
	}
	return part.ETag, nil
}

// CompleteParts makes the object of its parts, in order.
func (s *S3) CompleteParts(ctx context.Context, key, uploadID string, parts []Part) error {
	if err := checkKey(key); err != nil {
		return err
	}
	done := make([]minio.CompletePart, len(parts))
	for i, p := range parts {
		done[i] = minio.CompletePart{PartNumber: p.Number, ETag: p.ETag}
	}
	_, err := s.core.CompleteMultipartUpload(ctx, s.bucket, s.prefix+key, uploadID, done, minio.PutObjectOptions{ContentType: TypeOctet})
	return err
}

// AbortParts aborts a multipart upload; one already gone is not an error.
func (s *S3) AbortParts(ctx context.Context, key, uploadID string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	err := s.core.AbortMultipartUpload(ctx, s.bucket, s.prefix+key, uploadID)
	if err != nil && minio.ToErrorResponse(err).Code == minio.NoSuchUpload {
		return nil
	}
	return err
}

// Delete removes the object.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return s.client.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{})
}

// SweepUploads aborts the multipart uploads under the store's prefix that
// were initiated before cutoff, counting the bytes of the parts they held.
// Each upload is aborted by its own id, so a fresh upload of the same key
// (keys are never reused, but still) is left alone; one another replica
// aborted first answers NoSuchUpload and is skipped.
func (s *S3) SweepUploads(ctx context.Context, cutoff time.Time) (Swept, error) {
	var got Swept
	// The whole bucket is listed and filtered here: MinIO matches a listing
	// prefix only against whole object names, so "tenant/" would list none.
	for up := range s.client.ListIncompleteUploads(ctx, s.bucket, "", true) {
		if up.Err != nil {
			return got, fmt.Errorf("list incomplete uploads: %w", up.Err)
		}
		if !strings.HasPrefix(up.Key, s.prefix) || !up.Initiated.Before(cutoff) {
			continue
		}
		size := s.uploadedBytes(ctx, up.Key, up.UploadID)
		if err := s.core.AbortMultipartUpload(ctx, s.bucket, up.Key, up.UploadID); err != nil {
			if minio.ToErrorResponse(err).Code == minio.NoSuchUpload {
				continue
			}
			return got, fmt.Errorf("abort upload of %s: %w", up.Key, err)
		}
		got.Count++
		got.Bytes += size
	}
	return got, nil
}

// uploadedBytes sums the parts of an upload, for the sweeper's log; 0 when
// they cannot be listed (the abort that follows says whether the store works).
func (s *S3) uploadedBytes(ctx context.Context, key, uploadID string) int64 {
	var total int64
	marker := 0
	for {
		res, err := s.core.ListObjectParts(ctx, s.bucket, key, uploadID, marker, 1000)
		if err != nil {
			return total
		}
		for _, p := range res.ObjectParts {
			total += p.Size
		}
		if !res.IsTruncated || res.NextPartNumberMarker <= marker {
			return total
		}
		marker = res.NextPartNumberMarker
	}
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
