-- Search on PostgreSQL. The searched columns compare byte by byte (collation
-- "C", like SQLite's BINARY) whatever the database's collation: a prefix is
-- then a range of a plain B-tree index (name_norm >= 'abc' AND name_norm <
-- 'abc' || U+10FFFF), which also gives ORDER BY name_norm, so a prefix search
-- stops after its first rows. The tables are empty when this runs.
ALTER TABLE gazetteer_places ALTER COLUMN name_norm TYPE TEXT COLLATE "C";
ALTER TABLE gazetteer_postcodes ALTER COLUMN code_norm TYPE TEXT COLLATE "C";
ALTER TABLE gazetteer_postcodes ALTER COLUMN parent TYPE TEXT COLLATE "C";
ALTER TABLE gazetteer_postcodes ALTER COLUMN place_norm TYPE TEXT COLLATE "C";
CREATE INDEX gazetteer_places_name_prefix ON gazetteer_places (name_norm);
-- Towns of 5000 people or more, which a prefix search ranks first by
-- population without sorting every small place that shares the prefix.
CREATE INDEX gazetteer_places_big_prefix ON gazetteer_places (name_norm) WHERE population >= 5000;
CREATE INDEX gazetteer_postcodes_code_prefix ON gazetteer_postcodes (code_norm);
-- Districts and codes without hierarchy, which a postcode search lists first.
CREATE INDEX gazetteer_postcodes_top_prefix ON gazetteer_postcodes (code_norm) WHERE parent = '';
-- pg_trgm suggests towns when nothing is one typo away: the GiST index answers
-- "the names most similar to the query" (ORDER BY ... <-> query) directly. It
-- covers towns of 5000 people or more, which keeps it small and fast, and is
-- built on ' ' || name_norm (the same trigrams) so that the planner never
-- takes it for equality or range lookups of name_norm, which the B-tree serves
-- far better.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX gazetteer_places_name_trgm ON gazetteer_places USING gist ((' ' || name_norm) gist_trgm_ops) WHERE population >= 5000;
