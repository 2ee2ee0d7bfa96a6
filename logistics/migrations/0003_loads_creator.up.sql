-- The reference space of loads belongs to the organisation that created the
-- load (API.md, "Loads"): the organiser for the organiser form and batch
-- uploads, the carrier for the carrier form. A carrier that records a load
-- naming another organisation as organiser then neither blocks that
-- organisation's own references nor has its load changed by that
-- organisation's batch rows.
ALTER TABLE logistics_loads ADD COLUMN creator_org_id TEXT NOT NULL DEFAULT '';

-- Existing loads: the only loads created with a carrier are those of the
-- carrier form (the organiser form and batch rows have no carrier), and every
-- later change (hand-off, proof, batch row) moves updated_at. So a load with a
-- carrier other than its organiser that never changed was created by that
-- carrier; every other load goes to its organiser, which is what the old key
-- assumed. (A carrier-form load changed since cannot be told apart: it stays
-- with its organiser.)
UPDATE logistics_loads SET creator_org_id = CASE
    WHEN carrier_id IS NOT NULL AND carrier_id <> organiser_id AND created_at = updated_at THEN carrier_id
    ELSE organiser_id
END;

-- The business key: (organiser, reference) is unique within the creator's
-- reference space (409 on create, the upsert key of batch uploads, whose
-- creator is the row's organiser).
DROP INDEX logistics_loads_organiser_reference;
CREATE UNIQUE INDEX logistics_loads_creator_reference ON logistics_loads (creator_org_id, organiser_id, reference);
