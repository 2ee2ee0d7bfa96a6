DROP INDEX livestock_listings_org_since;
DROP INDEX livestock_listings_since;
