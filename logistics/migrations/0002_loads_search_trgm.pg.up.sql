-- PostgreSQL only: a trigram index answers the search's `query` (search LIKE
-- '%text%') without reading every visible load. SQLite has no such index: its
-- search filters the rows that the visibility indexes select.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX logistics_loads_search_trgm ON logistics_loads USING gin (search gin_trgm_ops);
