-- Search on PostgreSQL. The searched columns compare byte by byte (collation
-- "C", like SQLite's BINARY): LIKE 'abc%' then uses plain B-tree indexes
-- whatever the database's collation, and those indexes also give ORDER BY
-- name_norm, so a prefix search stops after its first rows. The tables are
-- empty when this runs.
ALTER TABLE gazetteer_places ALTER COLUMN name_norm TYPE TEXT COLLATE "C";
ALTER TABLE gazetteer_places ALTER COLUMN name_rev TYPE TEXT COLLATE "C";
ALTER TABLE gazetteer_postcodes ALTER COLUMN code_norm TYPE TEXT COLLATE "C";
ALTER TABLE gazetteer_postcodes ALTER COLUMN parent TYPE TEXT COLLATE "C";
ALTER TABLE gazetteer_postcodes ALTER COLUMN place_norm TYPE TEXT COLLATE "C";
CREATE INDEX gazetteer_places_name_prefix ON gazetteer_places (name_norm);
-- Towns of 5000 people or more, which a prefix search ranks first by
-- population without sorting every small place that shares the prefix.
CREATE INDEX gazetteer_places_big_prefix ON gazetteer_places (name_norm) WHERE population >= 5000;
CREATE INDEX gazetteer_places_rev_prefix ON gazetteer_places (name_rev);
CREATE INDEX gazetteer_postcodes_code_prefix ON gazetteer_postcodes (code_norm);
-- Districts and codes without hierarchy, which a postcode search lists first.
CREATE INDEX gazetteer_postcodes_top_prefix ON gazetteer_postcodes (code_norm) WHERE parent = '';
-- pg_trgm suggests names when nothing is one typo away: the GiST index answers
-- "the names most similar to the query" (ORDER BY name_norm <-> query) directly.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX gazetteer_places_name_trgm ON gazetteer_places USING gist (name_norm gist_trgm_ops);
