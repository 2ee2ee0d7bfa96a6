-- The indexes of the optional filter columns breed society and age range
-- hold only the listings that have a value: a filter on them (IN, >=) never
-- matches a NULL and implies the column IS NOT NULL, which is what both
-- databases need to read a partial index. A listing without a society or
-- ages (most sheep) then writes no page of these two indexes; on SQLite each
-- page a create dirties is written into the WAL and copied back at
-- checkpoint. Same columns, same names. (Breed and sexes, set on almost every
-- listing that has properties, stay whole: as partial indexes they changed
-- SQLite's choice for searches that filter on neither.)
DROP INDEX livestock_listings_society;
DROP INDEX livestock_listings_age;
CREATE INDEX livestock_listings_society ON livestock_listings (breed_society, status) WHERE breed_society IS NOT NULL;
CREATE INDEX livestock_listings_age ON livestock_listings (max_age, min_age) WHERE max_age IS NOT NULL;
