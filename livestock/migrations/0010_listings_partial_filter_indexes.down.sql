DROP INDEX livestock_listings_society;
DROP INDEX livestock_listings_age;
CREATE INDEX livestock_listings_society ON livestock_listings (breed_society, status);
CREATE INDEX livestock_listings_age ON livestock_listings (max_age, min_age);
