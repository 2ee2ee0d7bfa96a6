DROP INDEX IF EXISTS logistics_loads_search_trgm;
