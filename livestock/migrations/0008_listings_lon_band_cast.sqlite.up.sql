-- The longitude band of 0007 as a cast, not floor(): SQLite gives every INSERT
-- into a table whose index calls a function a statement journal (a function
-- may fail half-way through the indexes), which cost a listing create about a
-- quarter more CPU; a cast cannot fail, and the insert stays journal-free (see
-- Store.Insert, OR ROLLBACK). CAST truncates toward zero (listings.lonBand).
-- The expression must stay spelled as the search spells it (listings.lonBandSQL).
DROP INDEX livestock_listings_geo;
DROP INDEX livestock_listings_status_geo;
CREATE INDEX livestock_listings_geo ON livestock_listings (status, kind, type, hidden, CAST(lon * 2 AS INTEGER), lat, lon, created_at, id);
CREATE INDEX livestock_listings_status_geo ON livestock_listings (status, hidden, CAST(lon * 2 AS INTEGER), lat, lon, created_at, id);
