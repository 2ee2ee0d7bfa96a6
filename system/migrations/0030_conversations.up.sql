-- Conversations between users (internal/messaging). Participants are user ids
-- (token `sub`); names are denormalised from the tokens of their messages.
CREATE TABLE system_conversations (
    id             TEXT PRIMARY KEY,
    title          TEXT,
    listing_id     TEXT,
    listing_type   TEXT,
    created_by     TEXT NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL,
    message_count  INTEGER NOT NULL DEFAULT 0
);
-- "The caller's conversation for a listing" and the reuse of a listing conversation.
CREATE INDEX system_conversations_listing ON system_conversations (listing_id, updated_at) WHERE listing_id IS NOT NULL;

CREATE TABLE system_conversation_participants (
    conversation_id  TEXT NOT NULL REFERENCES system_conversations (id) ON DELETE CASCADE,
    user_id          TEXT NOT NULL,
    user_name        TEXT NOT NULL DEFAULT '',
    joined_at        TIMESTAMPTZ NOT NULL,
    -- Sequence number of the last message the participant has read (unread counts).
    last_read_seq    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (conversation_id, user_id)
);
-- Every list starts from the caller's participations.
CREATE INDEX system_conversation_participants_user ON system_conversation_participants (user_id, conversation_id);

CREATE TABLE system_conversation_messages (
    id               TEXT PRIMARY KEY,
    conversation_id  TEXT NOT NULL REFERENCES system_conversations (id) ON DELETE CASCADE,
    seq              INTEGER NOT NULL,
    sent_by_id       TEXT NOT NULL,
    sent_by_name     TEXT NOT NULL DEFAULT '',
    message          TEXT NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL
);
-- Messages of a page of conversations are read in one query, in order.
CREATE UNIQUE INDEX system_conversation_messages_seq ON system_conversation_messages (conversation_id, seq);
