package filestore

import (
	"context"
	"time"

	"github.com/agritrade/api/platform/config"
)

// Swept counts what one sweep of abandoned uploads removed.
type Swept struct {
	Count int
	Bytes int64
}

// uploadSweeper is a Blobs that can remove the bytes of uploads abandoned
// half-way: a local temporary file, an S3 multipart upload never completed.
// Both backends are; a Blobs that is not has nothing to sweep.
type uploadSweeper interface {
	// SweepUploads removes the uploads in progress whose last sign of life
	// is before cutoff. Another replica removing the same upload first is
	// not an error (it is simply not counted).
	SweepUploads(ctx context.Context, cutoff time.Time) (Swept, error)
}

// Default sweep settings, for a Service built without them (tests, tools).
const (
	DefaultSweepInterval = 10 * time.Minute
	DefaultSweepAge      = time.Hour
)

// SweepAge is how old an upload in progress must be before the sweeper of
// this configuration removes it. It is files.tmp_max_age, raised where the
// backend needs more:
//
//   - local: the age is the temporary file's modification time, and an
//     upload that is still moving writes each read of the body to the file as
//     it arrives (Local.Put). The server's body deadlines let one read wait at
//     most http.body_idle_timeout, so a live upload's file is never older than
//     that; config validation keeps files.tmp_max_age at twice it or more.
//   - s3: the only time S3 lists for an upload is when it was initiated, and
//     an upload that keeps to the deadlines may last as long as
//     body_idle_timeout + its bytes / body_min_rate (the rate is an average
//     over the time spent waiting for the body). So the age is at least that
//     for the largest upload allowed (files.max_upload_mb), plus room for the
//     handler's own work: about 28.5 h with the defaults. Without a bound
//     (a deadline, the rate or the upload limit switched off) the configured
//     age is used as it is.
//   - s3, resumable uploads: an upload's multipart upload (staged.go) is
//     initiated with its first part and lives until the upload expires,
//     files.resumable_ttl after its creation, and a PATCH begun just before
//     may go on for as long as an upload can (or uploadSlack, unbounded).
//     The resumable upload's own expiry sweep aborts it; this sweeper must
//     not do it first, so the age is at least that sum (about 52.5 h with
//     the defaults): it only catches what the other one could not remove.
func SweepAge(cfg *config.Config) time.Duration {
	age := cfg.Files.TmpMaxAge
	if age <= 0 {
		age = DefaultSweepAge
	}
	if cfg.Files.Backend == "s3" {
		longest := LongestUpload(cfg.HTTP, cfg.Files.MaxUploadMB<<20)
		age = max(age, longest)
		if cfg.Files.ResumableTTL > 0 {
			age = max(age, cfg.Files.ResumableTTL+max(longest, uploadSlack))
		}
	}
	return age
}

// uploadSlack covers what an upload spends besides waiting for its body
// (multipart framing before the file, hashing, sending parts to the store),
// and clock skew between the replica and the store.
const uploadSlack = 10 * time.Minute

// LongestUpload is the longest an upload of at most maxBytes can take while
// it keeps to the body deadlines of h; 0 when nothing bounds it.
func LongestUpload(h config.HTTP, maxBytes int64) time.Duration {
	if h.BodyIdleTimeout <= 0 || h.BodyMinRate <= 0 || maxBytes <= 0 {
		return 0
	}
	// The multipart body around the file (other fields, boundaries) is
	// counted by the rate too: allow a MiB of it.
	waiting := time.Duration(float64(maxBytes+1<<20) / float64(h.BodyMinRate) * float64(time.Second))
	return h.BodyIdleTimeout + waiting + uploadSlack
}

// SweepUploads removes, once, the uploads in progress older than the
// service's sweep age.
func (s *Service) SweepUploads(ctx context.Context) (Swept, error) {
	sw, ok := s.blobs.(uploadSweeper)
	if !ok {
		return Swept{}, nil
	}
	return sw.SweepUploads(ctx, s.opts.Now().Add(-s.opts.SweepAge))
}

// RunSweeper sweeps abandoned uploads now and then every sweep interval
// until ctx ends. A failing store is logged as a warning and tried again at
// the next tick: clients never see it.
func (s *Service) RunSweeper(ctx context.Context) error {
	log := s.opts.Log.WithField("component", "upload-sweeper")
	t := time.NewTicker(s.opts.SweepInterval)
	defer t.Stop()
	for {
		got, err := s.SweepUploads(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			log.WithError(err).Warn("sweeping abandoned uploads failed; trying again at the next tick")
		default:
			log.WithField("removed", got.Count).WithField("max_age", s.opts.SweepAge.String()).Debug("swept abandoned uploads")
			if got.Count > 0 {
				log.WithField("removed", got.Count).WithField("bytes", got.Bytes).Info("removed abandoned uploads")
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
