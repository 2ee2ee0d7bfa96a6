-- Resumable uploads stage their bytes where they will stay (resumable.go):
-- file_key is the storage key the file will have (reserved at creation);
-- on S3 the bytes are the parts of one multipart upload at that key
-- (multipart_id, and the parts uploaded so far as JSON [{n, etag, size}]),
-- on the local store one scratch file renamed to it at the end.
-- hash_state is the SHA-256 state after the received bytes (hex of its
-- binary form), saved with the offset so that any replica carries on the
-- file's hash without reading a byte back.
ALTER TABLE system_uploads ADD COLUMN file_key TEXT NOT NULL DEFAULT '';
ALTER TABLE system_uploads ADD COLUMN multipart_id TEXT NOT NULL DEFAULT '';
ALTER TABLE system_uploads ADD COLUMN multipart_parts TEXT NOT NULL DEFAULT '[]';
ALTER TABLE system_uploads ADD COLUMN hash_state TEXT NOT NULL DEFAULT '';
