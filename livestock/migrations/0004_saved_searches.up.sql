-- Saved searches (listing alerts). query keeps the search's parameters
-- (URL-encoded, parsed by the search's own parser when matching), body the
-- query object as the client sent it.
CREATE TABLE livestock_saved_searches (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    orgs        TEXT NOT NULL,
    name        TEXT NOT NULL,
    query       TEXT NOT NULL,
    body        TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX livestock_saved_searches_user ON livestock_saved_searches (user_id, created_at, id);

-- The matching index: each search under its kind (or '*'), the listing type
-- its status allows (or '*') and the 1° grid cells its area covers (or -1 for
-- anywhere). A new listing looks up 2 × 2 × 2 exact keys, whatever the number
-- of searches; only those candidates are then tested by the search's filter.
CREATE TABLE livestock_saved_search_cells (
    kind       TEXT NOT NULL,
    type       TEXT NOT NULL,
    cell       INTEGER NOT NULL,
    search_id  TEXT NOT NULL REFERENCES livestock_saved_searches (id) ON DELETE CASCADE,
    PRIMARY KEY (kind, type, cell, search_id)
);
CREATE INDEX livestock_saved_search_cells_search ON livestock_saved_search_cells (search_id);

-- One alert per (search, listing), whatever happens to the listing later.
CREATE TABLE livestock_saved_search_alerts (
    search_id   TEXT NOT NULL REFERENCES livestock_saved_searches (id) ON DELETE CASCADE,
    listing_id  TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (search_id, listing_id)
);
