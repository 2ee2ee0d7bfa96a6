-- Short links (internal/shortlinks) and their visits. input_hash identifies
-- (template, url, source, campaign) so the same input answers the same code.
CREATE TABLE system_short_links (
    id             TEXT PRIMARY KEY,
    code           TEXT NOT NULL,
    input_hash     TEXT NOT NULL,
    template       TEXT NOT NULL,
    url            TEXT NOT NULL,
    source         TEXT NOT NULL DEFAULT '',
    campaign       TEXT NOT NULL DEFAULT '',
    target         TEXT NOT NULL,
    created_by     TEXT NOT NULL DEFAULT '',
    created_at     TIMESTAMPTZ NOT NULL,
    visit_count    BIGINT NOT NULL DEFAULT 0,
    last_visit_at  TIMESTAMPTZ
);
CREATE UNIQUE INDEX system_short_links_code ON system_short_links (code);
CREATE UNIQUE INDEX system_short_links_input ON system_short_links (input_hash);

-- One row per redirect: when, the referring host and the class of user agent.
-- No IP address and no raw user-agent string is stored.
CREATE TABLE system_short_link_visits (
    id             TEXT PRIMARY KEY,
    link_id        TEXT NOT NULL REFERENCES system_short_links (id) ON DELETE CASCADE,
    visited_at     TIMESTAMPTZ NOT NULL,
    referrer_host  TEXT NOT NULL DEFAULT '',
    agent_class    TEXT NOT NULL
);
CREATE INDEX system_short_link_visits_link ON system_short_link_visits (link_id, visited_at);
