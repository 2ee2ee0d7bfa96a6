package files

// How a resumable upload's bytes reach the store: one pass over them, no
// copy at the end (issue 14: throughput of at least 0.8x the plain upload).
//
//   - local (appendChunk): every chunk is written at its offset into one
//     scratch file per upload; a PATCH that fails mid-way cuts the file back
//     to the offset, so Upload-Offset is always exact. With the last byte
//     the file is sniffed from its head, checked and renamed to the key
//     reserved at creation (filestore.Service.Adopt).
//   - s3 (partChunk): every chunk of 5 MiB or more is streamed as one part
//     of a single multipart upload at the reserved key, started with the
//     first part; the last chunk completes it, and Adopt sniffs the head with
//     a ranged GET. A part cut mid-way is not recorded: the offset stays at
//     the last whole chunk, and the client sends that chunk again (the same
//     part number, overwritten). A chunk under 5 MiB that is not the last
//     (S3 refuses such parts) is kept as a scratch object (system_upload_parts)
//     and read back once, as the head of the next part: the fallback, which
//     tus-js-client with a chunkSize of 5 MiB or more never takes.
//   - any other store, and uploads created before these columns existed
//     (scratchChunk): scratch objects read back as the body of an ordinary
//     filestore.Service.Put at the end.
//
// The file's SHA-256 runs across the chunks: its state is saved with the
// offset (hash_state, in the same UPDATE), so any replica carries it on.

import (
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"

	"database/sql"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/logging"
	"github.com/sirupsen/logrus"
	"github.com/uptrace/bun"
)

// Patch appends a chunk under the upload's lease and, with the last byte,
// turns the upload into a file. It answers the upload as it now is.
func (r *Resumable) Patch(ctx context.Context, p *auth.Principal, id string, ch Chunk) (*uploadRow, error) {
	lease, err := r.lock(ctx, p, id)
	if err != nil {
		return nil, err
	}
	defer lease.release()
	ctx = lease.ctx
	row, err := r.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if ch.Offset != row.Received {
		return nil, conflict(http.StatusConflict, "Upload-Offset %d is not the upload's offset %d", ch.Offset, row.Received)
	}
	left := row.Length - row.Received
	if ch.Length > left {
		return nil, overLength(row)
	}
	if ch.Length == 0 && ch.Checksum == nil {
		return row, nil
	}
	body := &chunkReader{r: ch.Body, left: left, row: row, want: ch.Checksum, exact: ch.Length == left}
	if ch.Checksum != nil {
		body.hash = sha256.New()
	}
	if row.FileKey == "" || !(r.files.CanAppend() || r.files.CanPart()) {
		return r.scratchChunk(ctx, p, row, lease, body)
	}
	if body.run, err = runningHash(row); err != nil {
		return nil, err
	}
	if ch.Length < 0 || ch.Length == left {
		// The last chunk may have been sent before and made the file, its
		// answer lost (the database failed after the file was recorded):
		// the file is answered again.
		if n, err := r.files.StagedSize(ctx, row.FileKey); err == nil && n == row.Length {
			return r.adoptAgain(ctx, p, row, lease, body)
		} else if err != nil && !errors.Is(err, filestore.ErrNotExist) {
			return nil, err
		}
	}
	if r.files.CanAppend() {
		return r.appendChunk(ctx, p, row, lease, body)
	}
	return r.partChunk(ctx, p, row, lease, body, ch.Length)
}

// scratchOf is the local scratch file of an upload.
func scratchOf(row *uploadRow) string {
	return filestore.ScratchPrefix + row.ID + ".data"
}

// appendChunk writes a chunk at its offset into the upload's scratch file
// and, with the last byte, makes the file of it.
func (r *Resumable) appendChunk(ctx context.Context, p *auth.Principal, row *uploadRow, lease *lease, body *chunkReader) (*uploadRow, error) {
	key := scratchOf(row)
	n, err := r.files.AppendScratch(ctx, key, row.Received, body)
	if errors.Is(err, filestore.ErrShort) {
		return nil, r.lostBytes(ctx, row, lease, err)
	}
	if err != nil {
		return nil, lease.lost(err)
	}
	if n == 0 {
		return row, nil
	}
	if row.Received+n < row.Length {
		return r.advanced(ctx, row, lease, body.run, n, nil, "", nil)
	}
	in, err := inputOf(row)
	if err != nil {
		return nil, err
	}
	rec, err := r.files.Adopt(ctx, p, in, filestore.Staged{From: key, Key: row.FileKey, Size: row.Length, Hash: hex.EncodeToString(body.run.Sum(nil))})
	return r.adopted(ctx, row, lease, body, rec, err, nil)
}

// partChunk sends a chunk as a part of the upload's multipart upload (or,
// under 5 MiB and not the last, keeps it as a scratch object for the next
// part) and, with the last byte, completes it and makes the file of it.
func (r *Resumable) partChunk(ctx context.Context, p *auth.Principal, row *uploadRow, lease *lease, body *chunkReader, length int64) (*uploadRow, error) {
	var parts []filestore.Part
	if err := json.Unmarshal([]byte(row.MultipartParts), &parts); err != nil {
		return nil, err
	}
	var pending []partRow
	if err := r.db.NewSelect().Model(&pending).Where("upload_id = ?", row.ID).Order("seq").Scan(ctx); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(pending)+1)
	var held int64
	for _, pt := range pending {
		keys = append(keys, pt.Key)
		held += pt.Size
	}
	last := length >= 0 && length == row.Length-row.Received
	if length >= 0 && (last || held+length >= filestore.MinPartSize) {
		// One part: the scratch chunks held back (read once), then this
		// chunk streamed through.
		stored := &partsReader{ctx: ctx, files: r.files, keys: keys}
		defer stored.Close()
		return r.putPart(ctx, p, row, lease, body, parts, keys, io.MultiReader(stored, body), held+length, length)
	}
	// A chunk S3 cannot take as a part (under 5 MiB, not the last) or of a
	// length the request did not say: a scratch chunk, as the fallback.
	key := partKey(row, lease)
	n, err := r.files.PutScratch(ctx, key, body)
	if err != nil {
		return nil, lease.lost(err)
	}
	if n == 0 {
		return row, r.files.DeleteScratch(ctx, key)
	}
	if row.Received+n == row.Length {
		keys = append(keys, key)
		stored := &partsReader{ctx: ctx, files: r.files, keys: keys}
		defer stored.Close()
		res, err := r.putPart(ctx, p, row, lease, body, parts, keys, stored, held+n, n)
		if err != nil {
			r.discard(ctx, key)
		}
		return res, err
	}
	return r.advanced(ctx, row, lease, body.run, n, nil, key, nil)
}

// putPart uploads src (size bytes: held-back scratch chunks, then the n
// bytes of this PATCH) as the next part; with the upload's last byte it
// completes the multipart upload and adopts the file. The part is recorded
// only once it is whole: one cut mid-way leaves the offset where it was.
func (r *Resumable) putPart(ctx context.Context, p *auth.Principal, row *uploadRow, lease *lease, body *chunkReader, parts []filestore.Part, held []string, src io.Reader, size, n int64) (*uploadRow, error) {
	if row.MultipartID == "" {
		id, err := r.files.StartParts(ctx, row.FileKey)
		if err != nil {
			return nil, err
		}
		// Recorded before any part, so that termination and expiry can
		// abort it whatever happens next.
		res, err := r.db.NewUpdate().Model((*uploadRow)(nil)).Set("multipart_id = ?", id).
			Where("id = ?", row.ID).Where("lease_token = ?", lease.token).Exec(ctx)
		if err == nil {
			if k, _ := res.RowsAffected(); k != 1 {
				err = errLeaseLost
			}
		}
		if err != nil {
			_ = r.files.AbortParts(context.WithoutCancel(ctx), row.FileKey, id)
			return nil, lease.lost(err)
		}
		row.MultipartID = id
	}
	part, err := r.files.PutPart(ctx, row.FileKey, row.MultipartID, len(parts)+1, src, size)
	if err == nil {
		// The store took size bytes; reading on to the end runs the
		// chunk's own checks (its checksum, its length).
		_, err = io.Copy(io.Discard, body)
	}
	if errors.Is(err, filestore.ErrNoSuchUpload) {
		return nil, r.lostBytes(ctx, row, lease, err)
	}
	if err != nil {
		return nil, lease.lost(err)
	}
	parts = append(parts, part)
	if row.Received+n < row.Length {
		return r.advanced(ctx, row, lease, body.run, n, parts, "", held)
	}
	if err := r.files.CompleteParts(ctx, row.FileKey, row.MultipartID, parts); err != nil {
		return nil, lease.lost(err)
	}
	in, err := inputOf(row)
	if err != nil {
		return nil, err
	}
	rec, err := r.files.Adopt(ctx, p, in, filestore.Staged{Key: row.FileKey, Size: row.Length, Hash: hex.EncodeToString(body.run.Sum(nil))})
	return r.adopted(ctx, row, lease, body, rec, err, held)
}

// adoptAgain answers the file an earlier last chunk made: the chunk sent
// again is read through (its checks, the hash) but not stored.
func (r *Resumable) adoptAgain(ctx context.Context, p *auth.Principal, row *uploadRow, lease *lease, body *chunkReader) (*uploadRow, error) {
	body.exact = true
	if _, err := io.Copy(io.Discard, body); err != nil {
		return nil, err
	}
	in, err := inputOf(row)
	if err != nil {
		return nil, err
	}
	rec, err := r.files.Adopt(ctx, p, in, filestore.Staged{Key: row.FileKey, Size: row.Length, Hash: hex.EncodeToString(body.run.Sum(nil))})
	return r.adopted(ctx, row, lease, body, rec, err, nil)
}

// lostBytes answers an upload whose staged bytes are gone from the store (a
// scratch file removed, a multipart upload aborted by hand or by a sweeper
// configured shorter than files.resumable_ttl): it starts again from 0, and
// the client, told 409, asks the offset and sends everything again.
func (r *Resumable) lostBytes(ctx context.Context, row *uploadRow, lease *lease, cause error) error {
	logging.Ctx(ctx, r.log).WithError(cause).WithField("upload", row.ID).Error("the staged bytes of a resumable upload are lost; it starts again from 0")
	r.dropStaged(ctx, row)
	err := r.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*partRow)(nil)).Where("upload_id = ?", row.ID).Exec(ctx); err != nil {
			return err
		}
		res, err := tx.NewUpdate().Model((*uploadRow)(nil)).
			Set("received = 0").Set("multipart_id = ''").Set("multipart_parts = '[]'").Set("hash_state = ''").
			Where("id = ?", row.ID).Where("lease_token = ?", lease.token).Exec(ctx)
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k != 1 {
			return errLeaseLost
		}
		return nil
	})
	if err != nil {
		return lease.lost(err)
	}
	return conflict(http.StatusConflict, "the upload's stored bytes were lost; ask its offset (now 0) and send it again")
}

// advanced records n more bytes under the lease: the running hash (run), the
// parts (S3, when set), the scratch chunk this PATCH stored (when set) and
// the end of the scratch chunks a part now holds (held), all in one
// transaction. A failure leaves the offset as it was; what this PATCH wrote
// past it is overwritten by the next one.
func (r *Resumable) advanced(ctx context.Context, row *uploadRow, lease *lease, run hash.Hash, n int64, parts []filestore.Part, scratch string, held []string) (*uploadRow, error) {
	state := ""
	if run != nil {
		b, err := run.(encoding.BinaryMarshaler).MarshalBinary()
		if err != nil {
			return nil, err
		}
		state = hex.EncodeToString(b)
	}
	sets := []set{{"hash_state", state}}
	if parts != nil {
		b, err := json.Marshal(parts)
		if err != nil {
			return nil, err
		}
		sets = append(sets, set{"multipart_parts", string(b)})
	}
	err := r.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if scratch != "" {
			if _, err := tx.NewInsert().Model(&partRow{UploadID: row.ID, Seq: row.Parts, Key: scratch, Size: n}).Exec(ctx); err != nil {
				return err
			}
		}
		if len(held) > 0 {
			if _, err := tx.NewDelete().Model((*partRow)(nil)).Where("upload_id = ?", row.ID).Where("key IN (?)", bun.List(held)).Exec(ctx); err != nil {
				return err
			}
		}
		return lease.advance(ctx, tx, row, n, sets...)
	})
	if err != nil {
		if scratch != "" {
			r.discard(ctx, scratch)
		}
		return nil, lease.lost(err)
	}
	row.Received += n
	row.Parts++
	row.HashState = state
	r.removeHeld(ctx, row.ID, held)
	logging.Ctx(ctx, r.log).WithFields(logrus.Fields{"upload": row.ID, "bytes": n, "offset": row.Received, "length": row.Length}).Debug("upload chunk stored")
	return row, nil
}

// runningHash is the SHA-256 state after the upload's received bytes.
func runningHash(row *uploadRow) (hash.Hash, error) {
	h := sha256.New()
	if row.Received == 0 {
		return h, nil
	}
	state, err := hex.DecodeString(row.HashState)
	if err == nil {
		err = h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state)
	}
	if err != nil {
		return nil, apierr.Internal(fmt.Errorf("upload %s: hash state: %w", row.ID, err))
	}
	return h, nil
}

// scratchChunk stores a chunk as a scratch object and, with the last byte,
// reads them all back as the body of an ordinary upload (stores that stage
// neither way, and uploads begun before they could).
func (r *Resumable) scratchChunk(ctx context.Context, p *auth.Principal, row *uploadRow, lease *lease, body *chunkReader) (*uploadRow, error) {
	var parts []partRow
	if err := r.db.NewSelect().Model(&parts).Where("upload_id = ?", row.ID).Order("seq").Scan(ctx); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(parts)+1)
	for _, pt := range parts {
		keys = append(keys, pt.Key)
	}
	in, err := inputOf(row)
	if err != nil {
		return nil, err
	}
	if body.exact {
		// The last chunk, of a known length: it streams straight into the
		// file behind the stored chunks, never stored as a chunk itself.
		stored := &partsReader{ctx: ctx, files: r.files, keys: keys}
		in.Body = io.MultiReader(stored, body)
		rec, err := r.files.Put(ctx, p, in)
		stored.Close()
		return r.adopted(ctx, row, lease, body, rec, err, keys)
	}
	key := partKey(row, lease)
	n, err := r.files.PutScratch(ctx, key, body)
	if err != nil {
		return nil, lease.lost(err)
	}
	if n == 0 {
		return row, r.files.DeleteScratch(ctx, key)
	}
	if row.Received+n < row.Length {
		return r.advanced(ctx, row, lease, nil, n, nil, key, nil)
	}
	// The last chunk, of a length the request did not say.
	keys = append(keys, key)
	stored := &partsReader{ctx: ctx, files: r.files, keys: keys}
	in.Body = stored
	rec, err := r.files.Put(ctx, p, in)
	stored.Close()
	if err != nil {
		r.discard(ctx, key)
	}
	return r.adopted(ctx, row, lease, body, rec, err, keys)
}

// partKey names a scratch chunk of an upload: its sequence number and the
// lease that writes it (a writer whose lease was taken over never
// overwrites the next writer's chunk).
func partKey(row *uploadRow, l *lease) string {
	return fmt.Sprintf("%s%s/%06d-%s", filestore.ScratchPrefix, row.ID, row.Parts, l.token[:12])
}

// adopted records the outcome of turning an upload into a file (rec, err);
// held are the scratch chunks it was made of, removed once it is. A refusal
// of the last chunk itself (its checksum, its length, a broken connection)
// leaves the upload as it was. A refusal the same bytes will always get
// (the content's type, the fields, the organisations) ends the upload: its
// row and bytes go. Any other failure (the store or the database down)
// leaves the upload as it was before this PATCH, which the client may send
// again.
func (r *Resumable) adopted(ctx context.Context, row *uploadRow, lease *lease, body *chunkReader, rec *filestore.Record, err error, held []string) (*uploadRow, error) {
	if err != nil {
		if body.err == nil && permanent(err) {
			if rerr := r.remove(context.WithoutCancel(ctx), row.ID); rerr != nil {
				r.log.WithError(rerr).WithField("upload", row.ID).Warn("could not remove a refused upload; the sweeper will")
			}
		}
		return nil, lease.lost(err)
	}
	if err := lease.advance(ctx, r.db, row, row.Length-row.Received, set{"file_id", rec.ID}, set{"hash_state", ""}, set{"multipart_id", ""}, set{"multipart_parts", "[]"}); err != nil {
		// The file exists but the upload does not say so: the client sees
		// the error and sends the last chunk again, answered by the same
		// file (Adopt is idempotent; the scratch path makes another).
		return nil, lease.lost(err)
	}
	row.Received, row.FileID = row.Length, rec.ID
	// The row stays until it expires, so that a HEAD still answers
	// Upload-File-Id.
	r.removeHeld(ctx, row.ID, held)
	logging.Ctx(ctx, r.log).WithFields(logrus.Fields{"upload": row.ID, "file": rec.ID, "length": row.Length}).Debug("resumable upload finished")
	return row, nil
}

// inputOf is the upload's fields as Put takes them.
func inputOf(row *uploadRow) (filestore.PutInput, error) {
	var orgs []string
	if err := json.Unmarshal([]byte(row.Organisations), &orgs); err != nil {
		return filestore.PutInput{}, err
	}
	return filestore.PutInput{Bucket: row.Bucket, Type: row.Type, Name: row.Name, OrganisationID: row.OrganisationID, Organisations: orgs}, nil
}

// permanent tells whether Put refused the content or the fields for good.
func permanent(err error) bool {
	e, ok := apierr.As(err)
	if !ok {
		return false
	}
	switch e.Code {
	case apierr.CodeValidation, apierr.CodeUnsupportedMedia, apierr.CodeForbidden, apierr.CodePayloadTooLarge:
		return true
	}
	return false
}

// Terminate removes an upload, its row and bytes (tus termination). A
// finished upload's file stays: it is an ordinary file by then.
func (r *Resumable) Terminate(ctx context.Context, p *auth.Principal, id string) error {
	lease, err := r.lock(ctx, p, id)
	if err != nil {
		return err
	}
	defer lease.release()
	return r.remove(lease.ctx, id)
}

// remove deletes an upload's bytes (its scratch chunks, its scratch file,
// its multipart upload aborted, bytes staged at its key that did not become
// a file), then its rows: a failure leaves the row for the next sweep.
func (r *Resumable) remove(ctx context.Context, id string) error {
	var row uploadRow
	err := r.db.NewSelect().Model(&row).Where("id = ?", id).Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	var parts []partRow
	if err := r.db.NewSelect().Model(&parts).Where("upload_id = ?", id).Scan(ctx); err != nil {
		return err
	}
	for _, pt := range parts {
		if err := r.files.DeleteScratch(ctx, pt.Key); err != nil {
			return err
		}
	}
	if err := r.dropStagedErr(ctx, &row); err != nil {
		return err
	}
	return r.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*partRow)(nil)).Where("upload_id = ?", id).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewDelete().Model((*uploadRow)(nil)).Where("id = ?", id).Exec(ctx)
		return err
	})
}

// dropStagedErr removes what an upload staged at its key (see remove).
func (r *Resumable) dropStagedErr(ctx context.Context, row *uploadRow) error {
	if row.FileKey == "" {
		return nil
	}
	if r.files.CanAppend() {
		if err := r.files.DeleteScratch(ctx, scratchOf(row)); err != nil {
			return err
		}
	}
	if row.MultipartID != "" {
		if err := r.files.AbortParts(ctx, row.FileKey, row.MultipartID); err != nil {
			return err
		}
	}
	if row.FileID == "" {
		return r.files.DropStaged(ctx, row.FileKey)
	}
	return nil
}

// dropStaged is dropStagedErr, best effort.
func (r *Resumable) dropStaged(ctx context.Context, row *uploadRow) {
	if err := r.dropStagedErr(context.WithoutCancel(ctx), row); err != nil {
		r.log.WithError(err).WithField("upload", row.ID).Warn("could not remove the staged bytes of an upload")
	}
}

// removeHeld deletes scratch chunks that are in a part or a file now, and
// their rows, best effort: what is left is removed with the upload when it
// expires.
func (r *Resumable) removeHeld(ctx context.Context, id string, keys []string) {
	if len(keys) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	for _, k := range keys {
		r.discard(ctx, k)
	}
	if _, err := r.db.NewDelete().Model((*partRow)(nil)).Where("upload_id = ?", id).Where("key IN (?)", bun.List(keys)).Exec(ctx); err != nil {
		r.log.WithError(err).WithField("upload", id).Warn("could not remove the chunk rows of an upload")
	}
}

// discard removes one scratch chunk.
func (r *Resumable) discard(ctx context.Context, key string) {
	if err := r.files.DeleteScratch(context.WithoutCancel(ctx), key); err != nil {
		r.log.WithError(err).WithField("key", key).Warn("could not remove an upload chunk")
	}
}
