DROP INDEX livestock_listings_geo;
DROP INDEX livestock_listings_status_geo;
CREATE INDEX livestock_listings_geo ON livestock_listings (status, kind, type, lat, lon, hidden, created_at, id);
CREATE INDEX livestock_listings_status_geo ON livestock_listings (status, lat, lon, hidden, created_at, id);
