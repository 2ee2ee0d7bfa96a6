-- Catch-up (updatedSinceUTC): each visibility arm of the search (organiser,
-- carrier, driver) gets an index in (updated_at, id) order, so "the loads I
-- see changed since T" reads three index ranges, oldest change first, whatever
-- the number of loads. The carrier index holds organiser_id so that the arm's
-- exclusion of the caller's own organised loads is checked in the index.
CREATE INDEX logistics_loads_organiser_since ON logistics_loads (organiser_id, updated_at, id);
CREATE INDEX logistics_loads_carrier_since ON logistics_loads (carrier_id, updated_at, id, organiser_id) WHERE carrier_id IS NOT NULL;
CREATE INDEX logistics_loads_driver_since ON logistics_loads (driver_id, updated_at, id) WHERE driver_id IS NOT NULL;
