DROP TABLE IF EXISTS gazetteer_meta;
DROP TABLE IF EXISTS gazetteer_postcodes;
DROP TABLE IF EXISTS gazetteer_places;
