DROP INDEX livestock_listings_geo;
DROP INDEX livestock_listings_status_geo;
CREATE INDEX livestock_listings_geo ON livestock_listings (status, kind, type, hidden, floor(lon * 2), lat, lon, created_at, id);
CREATE INDEX livestock_listings_status_geo ON livestock_listings (status, hidden, floor(lon * 2), lat, lon, created_at, id);
