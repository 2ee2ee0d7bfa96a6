-- Prefix search on PostgreSQL: text_pattern_ops makes LIKE 'abc%' use the
-- index whatever the database collation. The partial index holds the towns
-- of 5000 people or more, which a prefix search ranks first by population
-- without sorting every small place that shares the prefix. pg_trgm adds
-- fuzzy suggestions: a GiST trigram index answers "the names most similar to
-- the query" (ORDER BY name_norm <-> query) without scanning.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX gazetteer_places_name_prefix ON gazetteer_places (name_norm text_pattern_ops);
CREATE INDEX gazetteer_places_big_prefix ON gazetteer_places (name_norm text_pattern_ops) WHERE population >= 5000;
CREATE INDEX gazetteer_places_rev_prefix ON gazetteer_places (name_rev text_pattern_ops);
CREATE INDEX gazetteer_places_name_trgm ON gazetteer_places USING gist (name_norm gist_trgm_ops);
CREATE INDEX gazetteer_postcodes_code_prefix ON gazetteer_postcodes (code_norm text_pattern_ops);
