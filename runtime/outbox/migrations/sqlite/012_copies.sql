-- Adds copies (see migrations/postgres/005_versions.sql).
ALTER TABLE {{table}} ADD COLUMN copies BLOB;
