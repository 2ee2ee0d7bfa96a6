DROP TABLE system_short_link_visits;
DROP TABLE system_short_links;
