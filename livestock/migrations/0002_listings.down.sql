DROP TABLE IF EXISTS livestock_reports;
DROP TABLE IF EXISTS livestock_wishlist;
DROP TABLE IF EXISTS livestock_listing_info;
DROP TABLE IF EXISTS livestock_listings;
