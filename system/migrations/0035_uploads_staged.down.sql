ALTER TABLE system_uploads DROP COLUMN hash_state;
ALTER TABLE system_uploads DROP COLUMN multipart_parts;
ALTER TABLE system_uploads DROP COLUMN multipart_id;
ALTER TABLE system_uploads DROP COLUMN file_key;
