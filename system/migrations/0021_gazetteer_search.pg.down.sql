DROP INDEX IF EXISTS gazetteer_postcodes_code_prefix;
DROP INDEX IF EXISTS gazetteer_places_name_trgm;
DROP INDEX IF EXISTS gazetteer_places_rev_prefix;
DROP INDEX IF EXISTS gazetteer_places_name_prefix;
