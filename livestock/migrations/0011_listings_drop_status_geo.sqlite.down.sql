CREATE INDEX livestock_listings_status_geo ON livestock_listings (status, hidden, CAST(lon * 2 AS INTEGER), lat, lon, created_at, id);
