-- Reference data: countries, regions, commodities with types, grades, varieties
-- and default specifications, trading reasons, conversions. Seeded by the
-- module at start-up from the data committed under internal/refdata/data.

CREATE TABLE refdata_parameters (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE refdata_countries (
    iso               TEXT PRIMARY KEY,
    iso3              TEXT NOT NULL,
    name              TEXT NOT NULL,
    currency          TEXT NOT NULL,
    calling_code      TEXT NOT NULL,
    unit_distance     TEXT NOT NULL,
    unit_weight       TEXT NOT NULL,
    unit_capacity     TEXT NOT NULL,
    unit_temperature  TEXT NOT NULL,
    zone_descriptor   TEXT NOT NULL,
    locale            TEXT NOT NULL,
    continent         TEXT NOT NULL,
    enabled           BOOLEAN NOT NULL,
    weight_name       TEXT NOT NULL,
    weight_conversion DOUBLE PRECISION NOT NULL,
    sort_order        INTEGER NOT NULL
);

CREATE TABLE refdata_regions (
    iso          TEXT PRIMARY KEY,
    country      TEXT NOT NULL,
    name         TEXT NOT NULL,
    region_group TEXT NOT NULL,
    uk_group     TEXT NOT NULL,
    tb           INTEGER NOT NULL,
    aliases      TEXT NOT NULL,
    sort_order   INTEGER NOT NULL
);
CREATE INDEX refdata_regions_country ON refdata_regions (country, sort_order);

CREATE TABLE refdata_commodity_groups (
    id                            TEXT PRIMARY KEY,
    country                       TEXT NOT NULL,
    kind                          TEXT NOT NULL,
    default_weight_name           TEXT NOT NULL,
    default_weight_conversion     DOUBLE PRECISION NOT NULL,
    weighbridge_weight_name       TEXT NOT NULL,
    weighbridge_weight_conversion DOUBLE PRECISION NOT NULL,
    sort_order                    INTEGER NOT NULL
);
CREATE INDEX refdata_commodity_groups_country ON refdata_commodity_groups (country, sort_order);

CREATE TABLE refdata_commodity_items (
    id                INTEGER PRIMARY KEY,
    group_id          TEXT NOT NULL,
    name              TEXT NOT NULL,
    tags              TEXT NOT NULL,
    weight_name       TEXT NOT NULL,
    weight_conversion DOUBLE PRECISION NOT NULL,
    sort_order        INTEGER NOT NULL
);
CREATE INDEX refdata_commodity_items_group ON refdata_commodity_items (group_id, sort_order);

CREATE TABLE refdata_commodity_types (
    id         INTEGER PRIMARY KEY,
    item_id    INTEGER NOT NULL,
    name       TEXT NOT NULL,
    sort_order INTEGER NOT NULL
);
CREATE INDEX refdata_commodity_types_item ON refdata_commodity_types (item_id, sort_order);

CREATE TABLE refdata_commodity_grades (
    id                   INTEGER PRIMARY KEY,
    type_id              INTEGER NOT NULL,
    name                 TEXT NOT NULL,
    sort_order           INTEGER NOT NULL,
    -- 'seed' until an import overwrites the grade's varieties; reseeding keeps
    -- imported lists.
    varieties_source     TEXT NOT NULL DEFAULT 'seed',
    varieties_updated_at TIMESTAMPTZ NULL,
    varieties_updated_by TEXT NOT NULL DEFAULT ''
);
CREATE INDEX refdata_commodity_grades_type ON refdata_commodity_grades (type_id, sort_order);

CREATE TABLE refdata_varieties (
    grade_id   INTEGER NOT NULL,
    name       TEXT NOT NULL,
    sort_order INTEGER NOT NULL,
    PRIMARY KEY (grade_id, name)
);

CREATE TABLE refdata_specifications (
    id   INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    unit TEXT NOT NULL
);

CREATE TABLE refdata_grade_measures (
    grade_id   INTEGER NOT NULL,
    spec_id    INTEGER NOT NULL,
    min_value  DOUBLE PRECISION NOT NULL,
    max_value  DOUBLE PRECISION NOT NULL,
    sort_order INTEGER NOT NULL,
    PRIMARY KEY (grade_id, spec_id)
);

CREATE TABLE refdata_reasons (
    kind        TEXT NOT NULL,
    id          INTEGER NOT NULL,
    description TEXT NOT NULL,
    sort_order  INTEGER NOT NULL,
    PRIMARY KEY (kind, id)
);

CREATE TABLE refdata_ex_farm_prices (
    id           INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    commodity_id INTEGER NOT NULL,
    grades       TEXT NOT NULL,
    is_default   BOOLEAN NOT NULL,
    sort_order   INTEGER NOT NULL
);

CREATE TABLE refdata_conversions (
    key    TEXT PRIMARY KEY,
    factor DOUBLE PRECISION NOT NULL
);

CREATE TABLE refdata_seller_commodities (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    sort_order INTEGER NOT NULL
);
