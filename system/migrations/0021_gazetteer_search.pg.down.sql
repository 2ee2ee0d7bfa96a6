DROP INDEX IF EXISTS gazetteer_places_name_trgm;
DROP INDEX IF EXISTS gazetteer_postcodes_top_prefix;
DROP INDEX IF EXISTS gazetteer_postcodes_code_prefix;
DROP INDEX IF EXISTS gazetteer_places_big_prefix;
DROP INDEX IF EXISTS gazetteer_places_name_prefix;
ALTER TABLE gazetteer_postcodes ALTER COLUMN place_norm TYPE TEXT COLLATE "default";
ALTER TABLE gazetteer_postcodes ALTER COLUMN parent TYPE TEXT COLLATE "default";
ALTER TABLE gazetteer_postcodes ALTER COLUMN code_norm TYPE TEXT COLLATE "default";
ALTER TABLE gazetteer_places ALTER COLUMN name_norm TYPE TEXT COLLATE "default";
