-- Distance searches: the box around the circle was one range of latitude
-- within (status, kind, type), longitude checked in the index, so a 50 km
-- search read a 100 km band around the whole map. Keyed on the longitude band
-- (half a degree, listings.lonBandsPerDegree) ahead of the latitude, the box
-- is a few short ranges, one per band it spans, about the box itself. hidden
-- moves ahead too: every search asks hidden = false. Same columns otherwise
-- (index-only counts and pages), so a write costs what it did. The expression
-- must stay spelled as the search spells it (listings.lonBandSQL).
DROP INDEX livestock_listings_geo;
DROP INDEX livestock_listings_status_geo;
CREATE INDEX livestock_listings_geo ON livestock_listings (status, kind, type, hidden, floor(lon * 2), lat, lon, created_at, id);
CREATE INDEX livestock_listings_status_geo ON livestock_listings (status, hidden, floor(lon * 2), lat, lon, created_at, id);
