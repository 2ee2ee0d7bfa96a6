DROP TABLE IF EXISTS livestock_categories;
