-- Listings. The API shape lives in the JSON text columns (category_ids, location,
-- price, files, tags, properties); every field the search filters or sorts on is
-- copied into a real, indexed column, so that no search reads JSON.
CREATE TABLE livestock_listings (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    organisation_id TEXT NOT NULL,
    organisation_name TEXT NOT NULL,
    kind TEXT NOT NULL,
    type TEXT NOT NULL,
    status TEXT NOT NULL,
    breed_type TEXT NULL,
    breed_society TEXT NULL,
    sexes TEXT NULL,
    min_age DOUBLE PRECISION NULL,
    max_age DOUBLE PRECISION NULL,
    lat DOUBLE PRECISION NULL,
    lon DOUBLE PRECISION NULL,
    price_type TEXT NOT NULL,
    price_amount DOUBLE PRECISION NOT NULL,
    price_currency TEXT NOT NULL,
    hidden BOOLEAN NOT NULL DEFAULT FALSE,
    category_ids TEXT NOT NULL,
    location TEXT NULL,
    price TEXT NOT NULL,
    files TEXT NOT NULL,
    description TEXT NOT NULL,
    tags TEXT NOT NULL,
    properties TEXT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    closed_at TIMESTAMPTZ NULL
);

-- The common searches: a status (and kind and type) newest first, and a status
-- (and kind and type) within a latitude band, longitude checked in the index.
-- hidden, created_at and id ride along so that counting and choosing a page
-- are index-only scans (distance included: it is computed from lat and lon);
-- only the rows of the page are read from the table.
CREATE INDEX livestock_listings_recent ON livestock_listings (status, kind, type, hidden, created_at, id);
CREATE INDEX livestock_listings_geo ON livestock_listings (status, kind, type, lat, lon, hidden, created_at, id);
CREATE INDEX livestock_listings_status_geo ON livestock_listings (status, lat, lon, hidden, created_at, id);
CREATE INDEX livestock_listings_status_recent ON livestock_listings (status, hidden, created_at, id);
CREATE INDEX livestock_listings_org ON livestock_listings (organisation_id, status);
CREATE INDEX livestock_listings_breed ON livestock_listings (breed_type, status);
CREATE INDEX livestock_listings_society ON livestock_listings (breed_society, status);
CREATE INDEX livestock_listings_sexes ON livestock_listings (sexes, status);
CREATE INDEX livestock_listings_age ON livestock_listings (max_age, min_age);
CREATE INDEX livestock_listings_price ON livestock_listings (status, price_amount);

-- additionalInfo values, one row each, for f:commodityAdditionalInfo and its facet.
CREATE TABLE livestock_listing_info (
    listing_id TEXT NOT NULL REFERENCES livestock_listings (id) ON DELETE CASCADE,
    value TEXT NOT NULL,
    PRIMARY KEY (listing_id, value)
);

CREATE INDEX livestock_listing_info_value ON livestock_listing_info (value, listing_id);

CREATE TABLE livestock_wishlist (
    user_id TEXT NOT NULL,
    listing_id TEXT NOT NULL REFERENCES livestock_listings (id) ON DELETE CASCADE,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, listing_id)
);

CREATE INDEX livestock_wishlist_listing ON livestock_wishlist (listing_id);

-- Reports for moderation: one per user and listing; reviewed_at is set when an
-- admin reviews the listing.
CREATE TABLE livestock_reports (
    id TEXT PRIMARY KEY,
    listing_id TEXT NOT NULL REFERENCES livestock_listings (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL,
    user_name TEXT NOT NULL,
    organisation_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    message TEXT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    reviewed_at TIMESTAMPTZ NULL,
    reviewed_by TEXT NULL,
    decision TEXT NULL
);

CREATE UNIQUE INDEX livestock_reports_once ON livestock_reports (listing_id, user_id);
CREATE INDEX livestock_reports_open ON livestock_reports (reviewed_at, created_at);
