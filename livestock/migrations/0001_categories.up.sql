-- Listing categories: the reference tree that listings' categoryIds point into.
-- Rows are written by the module's seed from the reference data in
-- internal/categories (ids are fixed there, so they never change between installs).
CREATE TABLE livestock_categories (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    grp TEXT NOT NULL,
    parent_id INTEGER NULL REFERENCES livestock_categories (id),
    value TEXT NOT NULL,
    position INTEGER NOT NULL
);

CREATE INDEX livestock_categories_kind ON livestock_categories (kind, position);
