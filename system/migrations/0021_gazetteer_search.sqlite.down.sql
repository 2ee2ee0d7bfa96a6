DROP INDEX IF EXISTS gazetteer_postcodes_top_prefix;
DROP INDEX IF EXISTS gazetteer_postcodes_code_prefix;
DROP INDEX IF EXISTS gazetteer_places_big_prefix;
DROP INDEX IF EXISTS gazetteer_places_name_prefix;
