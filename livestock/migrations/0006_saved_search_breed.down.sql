CREATE TABLE livestock_saved_search_cells_v1 (
    kind       TEXT NOT NULL,
    type       TEXT NOT NULL,
    cell       INTEGER NOT NULL,
    search_id  TEXT NOT NULL REFERENCES livestock_saved_searches (id) ON DELETE CASCADE,
    PRIMARY KEY (kind, type, cell, search_id)
);

INSERT INTO livestock_saved_search_cells_v1 (kind, type, cell, search_id)
    SELECT DISTINCT kind, type, cell, search_id FROM livestock_saved_search_cells;

DROP TABLE livestock_saved_search_cells;

ALTER TABLE livestock_saved_search_cells_v1 RENAME TO livestock_saved_search_cells;

CREATE INDEX livestock_saved_search_cells_search ON livestock_saved_search_cells (search_id);
