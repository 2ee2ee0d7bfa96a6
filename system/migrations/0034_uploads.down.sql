DROP TABLE system_upload_parts;
DROP TABLE system_uploads;
