-- The longitude band truncated toward zero, as SQLite's cast computes it
-- (0008 on SQLite; listings.lonBand), so that one band function serves both.
-- The expression must stay spelled as the search spells it (listings.lonBandSQL).
DROP INDEX livestock_listings_geo;
DROP INDEX livestock_listings_status_geo;
CREATE INDEX livestock_listings_geo ON livestock_listings (status, kind, type, hidden, trunc(lon * 2), lat, lon, created_at, id);
CREATE INDEX livestock_listings_status_geo ON livestock_listings (status, hidden, trunc(lon * 2), lat, lon, created_at, id);
