-- Search on SQLite: a prefix is a range of these BINARY-collated indexes
-- (name_norm >= 'abc' AND name_norm < 'abc' || U+10FFFF, what LIKE 'abc%'
-- becomes), which also give ORDER BY name_norm, so a prefix search stops after
-- its first rows.
CREATE INDEX gazetteer_places_name_prefix ON gazetteer_places (name_norm);
-- Towns of 5000 people or more, which a prefix search ranks first by
-- population without sorting every small place that shares the prefix.
CREATE INDEX gazetteer_places_big_prefix ON gazetteer_places (name_norm) WHERE population >= 5000;
CREATE INDEX gazetteer_postcodes_code_prefix ON gazetteer_postcodes (code_norm);
-- Districts and codes without hierarchy, which a postcode search lists first.
CREATE INDEX gazetteer_postcodes_top_prefix ON gazetteer_postcodes (code_norm) WHERE parent = '';
