-- Prefix search on PostgreSQL: text_pattern_ops makes LIKE 'abc%' use the
-- index whatever the database collation. pg_trgm adds fuzzy candidates
-- (name_norm % query) through a GIN trigram index.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX gazetteer_places_name_prefix ON gazetteer_places (name_norm text_pattern_ops);
CREATE INDEX gazetteer_places_rev_prefix ON gazetteer_places (name_rev text_pattern_ops);
CREATE INDEX gazetteer_places_name_trgm ON gazetteer_places USING gin (name_norm gin_trgm_ops);
CREATE INDEX gazetteer_postcodes_code_prefix ON gazetteer_postcodes (code_norm text_pattern_ops);
