-- Catch-up (updatedSinceUTC): the active listings changed since T are one
-- range of (status, updated_at), the caller's organisation's own (drafts and
-- closed included) one range of (organisation_id, updated_at) per
-- organisation; hidden rides along so that neither reads the table to filter.
CREATE INDEX livestock_listings_since ON livestock_listings (status, updated_at, hidden, id);
CREATE INDEX livestock_listings_org_since ON livestock_listings (organisation_id, updated_at, hidden, id);
