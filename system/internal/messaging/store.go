package messaging

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/events"
	"github.com/agritrade/api/platform/outbox"
	"github.com/uptrace/bun"
)

type conversationRow struct {
	bun.BaseModel `bun:"table:system_conversations,alias:c"`

	ID           string    `bun:"id,pk"`
	Title        *string   `bun:"title"`
	ListingID    *string   `bun:"listing_id"`
	ListingType  *string   `bun:"listing_type"`
	CreatedBy    string    `bun:"created_by,notnull"`
	CreatedAt    time.Time `bun:"created_at,notnull"`
	UpdatedAt    time.Time `bun:"updated_at,notnull"`
	MessageCount int       `bun:"message_count,notnull"`
	// LastReadSeq is the caller's read mark, filled by the caller-scoped queries.
	LastReadSeq int `bun:"last_read_seq,scanonly"`
}

type participantRow struct {
	bun.BaseModel `bun:"table:system_conversation_participants,alias:p"`

	ConversationID string    `bun:"conversation_id,pk"`
	UserID         string    `bun:"user_id,pk"`
	UserName       string    `bun:"user_name,notnull"`
	JoinedAt       time.Time `bun:"joined_at,notnull"`
	LastReadSeq    int       `bun:"last_read_seq,notnull"`
	// UpdatedAt copies the conversation's updated_at (the catch-up index).
	UpdatedAt time.Time `bun:"updated_at,notnull"`
}

type messageRow struct {
	bun.BaseModel `bun:"table:system_conversation_messages,alias:m"`

	ID             string    `bun:"id,pk"`
	ConversationID string    `bun:"conversation_id,notnull"`
	Seq            int       `bun:"seq,notnull"`
	SentByID       string    `bun:"sent_by_id,notnull"`
	SentByName     string    `bun:"sent_by_name,notnull"`
	Message        string    `bun:"message,notnull"`
	CreatedAt      time.Time `bun:"created_at,notnull"`
}

// errNotFound means no such conversation for this caller.
var errNotFound = errors.New("conversation not found")

// sortColumns maps the sortBy whitelist to columns.
var sortColumns = map[string]string{
	"createdAtUTC": "c.created_at",
	"updatedAtUTC": "c.updated_at",
	"title":        "COALESCE(c.title, '')",
}

// store holds the SQL of conversations over a db.Conn: the pool, or within InTx one
// transaction.
type store struct{ db.Conn }

func newStore(bdb *bun.DB) store { return store{db.NewConn(bdb)} }

// InTx runs fn with the store bound to one transaction (db.Conn.InTx).
func (s store) InTx(ctx context.Context, fn func(ctx context.Context, tx store) error) error {
	return s.Conn.InTx(ctx, func(ctx context.Context, c db.Conn) error { return fn(ctx, store{c}) })
}

// Enqueue adds a notification to the outbox in the store's transaction.
func (s store) Enqueue(ctx context.Context, ev outbox.Event) error {
	return outbox.Enqueue(ctx, s.IDB, ev)
}

// AppendEvent adds an event to the live stream in the store's transaction.
func (s store) AppendEvent(ctx context.Context, ev events.Event) error {
	return events.Append(ctx, s.IDB, ev)
}

// selectForUser starts a query over the conversations userID participates in,
// with the caller's read mark.
func (store) selectForUser(idb bun.IDB, rows any, userID string) *bun.SelectQuery {
	return idb.NewSelect().Model(rows).ColumnExpr("c.*").ColumnExpr("p.last_read_seq").
		Join("JOIN system_conversation_participants AS p ON p.conversation_id = c.id AND p.user_id = ?", userID)
}

// get answers the conversation id if userID participates in it.
func (s store) get(ctx context.Context, id, userID string) (*conversationRow, error) {
	row := new(conversationRow)
	err := s.selectForUser(s.IDB, row, userID).Where("c.id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNotFound
	}
	return row, err
}

// forListing answers userID's most recently active conversation about a listing.
func (s store) forListing(ctx context.Context, listingID, userID string) (*conversationRow, error) {
	row := new(conversationRow)
	err := s.selectForUser(s.IDB, row, userID).Where("c.listing_id = ?", listingID).
		OrderExpr("c.updated_at DESC, c.id DESC").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNotFound
	}
	return row, err
}

// forListingPair answers the conversation about a listing in which both users
// participate (the one a new message about that listing continues).
func (s store) forListingPair(ctx context.Context, listingID, listingType, userID, other string) (*conversationRow, error) {
	row := new(conversationRow)
	err := s.selectForUser(s.IDB, row, userID).
		Join("JOIN system_conversation_participants AS o ON o.conversation_id = c.id AND o.user_id = ?", other).
		Where("c.listing_id = ? AND c.listing_type = ?", listingID, listingType).
		OrderExpr("c.updated_at DESC, c.id DESC").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNotFound
	}
	return row, err
}

// count answers how many conversations userID participates in, those changed
// after since when it is set (a range of the participants' since index).
func (s store) count(ctx context.Context, userID string, since *time.Time) (int, error) {
	q := s.IDB.NewSelect().Model((*participantRow)(nil)).Where("p.user_id = ?", userID)
	if since != nil {
		q = q.Where("p.updated_at > ?", since.UTC())
	}
	n, err := q.Count(ctx)
	return int(n), err
}

// page answers one page of userID's conversations in the given order, those
// changed after since when it is set. The participant's copy of updated_at
// sorts by the change time, so a catch-up page reads its index in order.
func (s store) page(ctx context.Context, userID string, since *time.Time, sortBy string, desc bool, limit, offset int) ([]conversationRow, error) {
	dir := " ASC"
	if desc {
		dir = " DESC"
	}
	col := sortColumns[sortBy]
	if sortBy == "updatedAtUTC" {
		col = "p.updated_at"
	}
	var rows []conversationRow
	q := s.selectForUser(s.IDB, &rows, userID)
	if since != nil {
		q = q.Where("p.updated_at > ?", since.UTC())
	}
	// The tie-break is the participation's conversation_id (equal to c.id by
	// the join) so that a catch-up page reads the since index in order, the
	// last of its columns included, instead of sorting every match.
	err := q.OrderExpr(col + dir).OrderExpr("p.conversation_id" + dir).
		Limit(int64(limit)).Offset(int64(offset)).Scan(ctx)
	return rows, err
}

// messages answers the messages of the conversations, oldest first, in one
// query; last > 0 keeps only each conversation's last messages.
func (s store) messages(ctx context.Context, ids []string, last int) (map[string][]messageRow, error) {
	out := map[string][]messageRow{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []messageRow
	q := s.IDB.NewSelect().Model(&rows).Where("m.conversation_id IN (?)", bun.List(ids))
	if last > 0 {
		// seq numbers are dense per conversation: the last N are those above count-N.
		q = q.Join("JOIN system_conversations AS c ON c.id = m.conversation_id").Where("m.seq > c.message_count - ?", last)
	}
	if err := q.OrderExpr("m.conversation_id, m.seq").Scan(ctx); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ConversationID] = append(out[r.ConversationID], r)
	}
	return out, nil
}

// participants answers the participants of the conversations in one query.
func (s store) participants(ctx context.Context, ids []string) (map[string][]participantRow, error) {
	out := map[string][]participantRow{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []participantRow
	if err := s.IDB.NewSelect().Model(&rows).Where("p.conversation_id IN (?)", bun.List(ids)).
		OrderExpr("p.conversation_id, p.joined_at, p.user_id").Scan(ctx); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ConversationID] = append(out[r.ConversationID], r)
	}
	return out, nil
}

// unread answers, per conversation, the messages of others userID has not read.
func (s store) unread(ctx context.Context, ids []string, userID string) (map[string]int, error) {
	out := map[string]int{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		ConversationID string `bun:"conversation_id"`
		N              int    `bun:"n"`
	}
	err := s.IDB.NewSelect().TableExpr("system_conversation_messages AS m").
		ColumnExpr("m.conversation_id, COUNT(*) AS n").
		Join("JOIN system_conversation_participants AS p ON p.conversation_id = m.conversation_id AND p.user_id = ?", userID).
		Where("m.conversation_id IN (?) AND m.seq > p.last_read_seq AND m.sent_by_id <> ?", bun.List(ids), userID).
		GroupExpr("m.conversation_id").Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ConversationID] = r.N
	}
	return out, nil
}

func (s store) insertConversation(ctx context.Context, row *conversationRow) error {
	_, err := s.IDB.NewInsert().Model(row).Exec(ctx)
	return err
}

// join adds a participant unless already there.
func (s store) join(ctx context.Context, row *participantRow) error {
	_, err := s.IDB.NewInsert().Model(row).On("CONFLICT (conversation_id, user_id) DO NOTHING").Exec(ctx)
	return err
}

// knownName answers the last name a user's own token gave, "" when never seen.
func (s store) knownName(ctx context.Context, userID string) (string, error) {
	var names []string
	err := s.IDB.NewSelect().Model((*participantRow)(nil)).Column("user_name").
		Where("p.user_id = ? AND p.user_name <> ''", userID).OrderExpr("p.joined_at DESC").Limit(1).Scan(ctx, &names)
	if err != nil || len(names) == 0 {
		return "", err
	}
	return names[0], nil
}

// appendMessage numbers and stores a message. The counter update locks the
// conversation row, so concurrent senders get consecutive numbers.
func (s store) appendMessage(ctx context.Context, m *messageRow) error {
	var seq []int
	err := s.IDB.NewUpdate().Model((*conversationRow)(nil)).
		Set("message_count = message_count + 1").Set("updated_at = ?", m.CreatedAt).
		Where("id = ?", m.ConversationID).Returning("message_count").Scan(ctx, &seq)
	if err != nil {
		return err
	}
	if len(seq) != 1 {
		return errNotFound
	}
	m.Seq = seq[0]
	// Every participant's catch-up copy moves with the conversation.
	if _, err = s.IDB.NewUpdate().Model((*participantRow)(nil)).Set("updated_at = ?", m.CreatedAt).
		Where("conversation_id = ?", m.ConversationID).Exec(ctx); err != nil {
		return err
	}
	_, err = s.IDB.NewInsert().Model(m).Exec(ctx)
	return err
}

// markRead moves userID's read mark forward to seq (never back), and refreshes
// the participant's name when one is given.
func (s store) markRead(ctx context.Context, conversationID, userID string, seq int, name string) error {
	q := s.IDB.NewUpdate().Model((*participantRow)(nil)).
		Set("last_read_seq = CASE WHEN last_read_seq < ? THEN ? ELSE last_read_seq END", seq, seq).
		Where("conversation_id = ? AND user_id = ?", conversationID, userID)
	if name != "" {
		q = q.Set("user_name = ?", name)
	}
	_, err := q.Exec(ctx)
	return err
}
