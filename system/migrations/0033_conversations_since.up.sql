-- Catch-up (updatedSinceUTC): each participation carries the time its
-- conversation last changed, so "the caller's conversations changed since T"
-- is one range of the (user_id, updated_at) index rather than a walk over
-- every conversation of the user. Kept equal to system_conversations.updated_at
-- by the message writer.
ALTER TABLE system_conversation_participants ADD COLUMN updated_at TIMESTAMPTZ;
UPDATE system_conversation_participants SET updated_at =
    (SELECT c.updated_at FROM system_conversations AS c WHERE c.id = system_conversation_participants.conversation_id);
CREATE INDEX system_conversation_participants_since ON system_conversation_participants (user_id, updated_at, conversation_id);
