DROP TABLE IF EXISTS logistics_loads;
