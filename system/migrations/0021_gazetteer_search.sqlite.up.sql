-- Prefix search on SQLite: GLOB 'abc*' uses these BINARY-collated indexes
-- (normalised names hold no GLOB wildcards). The one-edit fuzzy fallback
-- searches name_norm by prefix and name_rev by prefix (the end of the name).
CREATE INDEX gazetteer_places_name_prefix ON gazetteer_places (name_norm);
CREATE INDEX gazetteer_places_rev_prefix ON gazetteer_places (name_rev);
CREATE INDEX gazetteer_postcodes_code_prefix ON gazetteer_postcodes (code_norm);
