-- The breed joins the matching key: a search for Texel sheep anywhere was a
-- candidate for every new sheep listing (with 100,000 saved searches, most of
-- the cost per listing); now only for Texel ones. '*' is any breed, which is
-- what every search indexed so far is filed under (still a candidate
-- wherever it was, so nothing that matched before is missed).
CREATE TABLE livestock_saved_search_cells_v2 (
    kind       TEXT NOT NULL,
    type       TEXT NOT NULL,
    breed      TEXT NOT NULL,
    cell       INTEGER NOT NULL,
    search_id  TEXT NOT NULL REFERENCES livestock_saved_searches (id) ON DELETE CASCADE,
    PRIMARY KEY (kind, type, breed, cell, search_id)
);

INSERT INTO livestock_saved_search_cells_v2 (kind, type, breed, cell, search_id)
    SELECT kind, type, '*', cell, search_id FROM livestock_saved_search_cells;

DROP TABLE livestock_saved_search_cells;

ALTER TABLE livestock_saved_search_cells_v2 RENAME TO livestock_saved_search_cells;

CREATE INDEX livestock_saved_search_cells_search ON livestock_saved_search_cells (search_id);
