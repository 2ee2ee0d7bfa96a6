-- Questions and grain-sample requests for the agricultural experts
-- (internal/experts). files holds the canonical file references (JSON).
CREATE TABLE system_expert_requests (
    id                 TEXT PRIMARY KEY,
    kind               TEXT NOT NULL,
    status             TEXT NOT NULL,
    question           TEXT NOT NULL DEFAULT '',
    files              TEXT NOT NULL DEFAULT '[]',
    user_id            TEXT NOT NULL,
    user_name          TEXT NOT NULL DEFAULT '',
    organisation_id    TEXT NOT NULL DEFAULT '',
    organisation_name  TEXT NOT NULL DEFAULT '',
    created_at         TIMESTAMPTZ NOT NULL
);
-- The experts' queue (open requests, oldest first) and a user's own requests.
CREATE INDEX system_expert_requests_status ON system_expert_requests (status, created_at);
CREATE INDEX system_expert_requests_user ON system_expert_requests (user_id, created_at);
