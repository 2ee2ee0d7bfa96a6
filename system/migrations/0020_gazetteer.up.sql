-- The gazetteer of the embedded location provider: populated places and
-- postcodes with their coordinates, region (ISO 3166-2) and country.
-- Names and codes are stored twice: as shown, and normalised for search
-- (name_norm: lower case, no accents, single spaces; name_rev: name_norm
-- reversed, so that a name's end can be searched by prefix for typo tolerance).

CREATE TABLE gazetteer_places (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    name_norm    TEXT NOT NULL,
    name_rev     TEXT NOT NULL,
    kind         TEXT NOT NULL,
    country_iso  TEXT NOT NULL,
    country_name TEXT NOT NULL,
    region_iso   TEXT NOT NULL DEFAULT '',
    region_name  TEXT NOT NULL DEFAULT '',
    lat          DOUBLE PRECISION NOT NULL,
    lon          DOUBLE PRECISION NOT NULL,
    population   BIGINT NOT NULL DEFAULT 0,
    three_words  TEXT,
    -- postcodes counts the postcodes (districts, or codes without hierarchy)
    -- named after this place: the content of the place as a locality container.
    postcodes    INTEGER NOT NULL DEFAULT 0
);

-- Coordinates index: nearest-place queries range over lat and filter lon
-- inside the index (bounding-box prefilter), then rank by great-circle distance.
CREATE INDEX gazetteer_places_lat_lon ON gazetteer_places (lat, lon);
CREATE UNIQUE INDEX gazetteer_places_three_words ON gazetteer_places (three_words);
CREATE INDEX gazetteer_places_country_norm ON gazetteer_places (country_iso, name_norm);

CREATE TABLE gazetteer_postcodes (
    id           TEXT PRIMARY KEY,
    code         TEXT NOT NULL,
    code_norm    TEXT NOT NULL,
    -- parent is the district (outward code, Eircode routing key) of a full
    -- postcode, '' for districts and for codes of systems without hierarchy.
    parent       TEXT NOT NULL DEFAULT '',
    is_district  BOOLEAN NOT NULL DEFAULT FALSE,
    place_name   TEXT NOT NULL DEFAULT '',
    place_norm   TEXT NOT NULL DEFAULT '',
    country_iso  TEXT NOT NULL,
    country_name TEXT NOT NULL,
    region_iso   TEXT NOT NULL DEFAULT '',
    region_name  TEXT NOT NULL DEFAULT '',
    lat          DOUBLE PRECISION NOT NULL,
    lon          DOUBLE PRECISION NOT NULL,
    three_words  TEXT,
    -- children counts the full postcodes of a district.
    children     INTEGER NOT NULL DEFAULT 0
);

CREATE UNIQUE INDEX gazetteer_postcodes_country_code ON gazetteer_postcodes (country_iso, code_norm);
CREATE INDEX gazetteer_postcodes_parent ON gazetteer_postcodes (country_iso, parent, code_norm);
CREATE INDEX gazetteer_postcodes_place ON gazetteer_postcodes (country_iso, place_norm);
CREATE INDEX gazetteer_postcodes_lat_lon ON gazetteer_postcodes (lat, lon);
CREATE UNIQUE INDEX gazetteer_postcodes_three_words ON gazetteer_postcodes (three_words);

-- gazetteer_meta keeps small facts about the gazetteer, such as the hash of
-- the seeded data set, so that starting up re-seeds only when it changed.
CREATE TABLE gazetteer_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
