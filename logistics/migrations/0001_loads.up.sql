-- Loads (haulage jobs). Carrier and driver are NULL until set. files and tags
-- are JSON arrays kept as TEXT; search is the normalised text that the
-- search's `query` matches (letters and digits, lower case, fields separated
-- by '|').
CREATE TABLE logistics_loads (
    id                   TEXT PRIMARY KEY,
    reference            TEXT NOT NULL,
    organiser_id         TEXT NOT NULL,
    organiser_name       TEXT NOT NULL,
    carrier_id           TEXT,
    carrier_name         TEXT,
    driver_id            TEXT,
    driver_name          TEXT,
    commodity_id         INTEGER NOT NULL,
    commodity_name       TEXT NOT NULL,
    weight_unit          TEXT NOT NULL,
    weight_conversion    DOUBLE PRECISION NOT NULL,
    delivery_date        TIMESTAMPTZ NOT NULL,
    delivery_date_iso    TEXT NOT NULL,
    pickup_postcode      TEXT NOT NULL DEFAULT '',
    dropoff_postcode     TEXT NOT NULL DEFAULT '',
    weight               DOUBLE PRECISION,
    weight_net           DOUBLE PRECISION,
    vehicle_registration TEXT NOT NULL DEFAULT '',
    ticket_number        TEXT NOT NULL DEFAULT '',
    status               TEXT NOT NULL,
    files                TEXT NOT NULL DEFAULT '[]',
    tags                 TEXT NOT NULL DEFAULT '[]',
    search               TEXT NOT NULL DEFAULT '',
    created_by           TEXT NOT NULL,
    created_at           TIMESTAMPTZ NOT NULL,
    updated_at           TIMESTAMPTZ NOT NULL,
    completed_at         TIMESTAMPTZ
);

-- The business key: an organiser's references are unique (409 on reuse, upsert key of batch uploads).
CREATE UNIQUE INDEX logistics_loads_organiser_reference ON logistics_loads (organiser_id, reference);

-- Visibility: a caller sees the loads of its organisations as organiser or as
-- carrier, and those it drives. The search reads each of these arms apart
-- (disjoint: the carrier arm leaves out the caller's own organised loads), so
-- each has its own index, ordered by delivery date (the date filter and the
-- default sort) and id (the tie-break of pages and of keyset batches of CSV
-- streams). The carrier index also holds organiser_id, so that counting the
-- carrier arm reads the index only.
CREATE INDEX logistics_loads_organiser_date ON logistics_loads (organiser_id, delivery_date, id);
CREATE INDEX logistics_loads_carrier_date ON logistics_loads (carrier_id, delivery_date, id, organiser_id) WHERE carrier_id IS NOT NULL;
CREATE INDEX logistics_loads_driver_date ON logistics_loads (driver_id, delivery_date, id) WHERE driver_id IS NOT NULL;
