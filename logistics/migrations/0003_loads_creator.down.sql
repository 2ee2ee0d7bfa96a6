-- Back to one reference space per organiser. Fails (unique violation) when a
-- carrier-created load and its organiser's own load share a reference: that
-- state only exists under the new key and must be resolved by hand first.
DROP INDEX logistics_loads_creator_reference;
CREATE UNIQUE INDEX logistics_loads_organiser_reference ON logistics_loads (organiser_id, reference);
ALTER TABLE logistics_loads DROP COLUMN creator_org_id;
