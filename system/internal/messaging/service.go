package messaging

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/events"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/ids"
	"github.com/agritrade/api/platform/outbox"
	"github.com/google/uuid"
)

// Sortable lists the sortBy values of the conversation list.
var Sortable = []string{"createdAtUTC", "updatedAtUTC", "title"}

// ListMessages caps the messages each conversation of a list carries (the
// latest ones); reading one conversation answers all of its messages.
const ListMessages = 50

// Service holds the rules: only participants see or extend a conversation,
// a listing conversation between two users is continued rather than
// duplicated, and every message notifies the others in the same transaction.
type Service struct {
	store store
	now   func() time.Time
}

// NewService makes the service over the database.
func NewService(st store) *Service {
	return &Service{store: st, now: time.Now}
}

// Send stores a message from p. pathID is the conversation of the route
// ("add a message"), "" for "create a conversation from a message". It
// answers the conversation as p sees it after the message.
func (s *Service) Send(ctx context.Context, p *auth.Principal, pathID string, in MessageInput) (*Conversation, error) {
	d, err := NewDraft(in, p.UserID)
	if pathID != "" {
		var f apierr.Fields
		if ae, ok := apierr.As(err); ok {
			f.Merge(ae.Validation)
		} else if err != nil {
			return nil, err
		}
		f.Check(d.ConversationID == "" || d.ConversationID == pathID, "conversationId", "mismatch", "must be the conversation of the path when given")
		err = f.Err()
		d.ConversationID = pathID
	}
	if err != nil {
		return nil, err
	}
	var conv *Conversation
	err = s.store.InTx(ctx, func(ctx context.Context, tx store) error {
		row, err := s.target(ctx, tx, p, d)
		if err != nil {
			return err
		}
		now := s.now().UTC()
		toName, err := tx.knownName(ctx, d.To)
		if err != nil {
			return err
		}
		if err := tx.join(ctx, &participantRow{ConversationID: row.ID, UserID: d.To, UserName: toName, JoinedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		msg := &messageRow{ID: uuid.Must(uuid.NewV7()).String(), ConversationID: row.ID, SentByID: p.UserID, SentByName: p.Name, Message: d.Text, CreatedAt: now}
		if err := tx.appendMessage(ctx, msg); err != nil {
			return err
		}
		if err := tx.markRead(ctx, row.ID, p.UserID, msg.Seq, p.Name); err != nil {
			return err
		}
		convs, err := s.assemble(ctx, tx, p.UserID, []conversationRow{*row}, 0)
		if err != nil {
			return err
		}
		conv = &convs[0]
		conv.Unread = 0 // the sender has just seen the whole conversation
		if err := tx.Enqueue(ctx, notification(conv, p, msg)); err != nil {
			return err
		}
		return tx.AppendEvent(ctx, streamEvent(conv, msg))
	})
	if errors.Is(err, errNotFound) {
		return nil, apierr.NotFound("conversation")
	}
	if err != nil {
		if _, ok := apierr.As(err); ok {
			return nil, err
		}
		return nil, apierr.Internal(err)
	}
	return conv, nil
}

// target answers the conversation a draft goes to: the given one (p must take
// part), the existing one about the same listing between p and the recipient,
// or a new one.
func (s *Service) target(ctx context.Context, tx store, p *auth.Principal, d Draft) (*conversationRow, error) {
	if d.ConversationID != "" {
		row, err := tx.get(ctx, d.ConversationID, p.UserID)
		if err != nil {
			return nil, err
		}
		var f apierr.Fields
		f.Check(d.ListingID == "" || d.ListingID == deref(row.ListingID), "listingId", "mismatch", "must be the listing of the conversation when given")
		f.Check(d.ListingType == "" || d.ListingType == deref(row.ListingType), "listingType", "mismatch", "must be the listing type of the conversation when given")
		f.Check(d.Title == "" || d.Title == deref(row.Title), "title", "mismatch", "must be the title of the conversation when given")
		return row, f.Err()
	}
	if d.ListingID != "" {
		row, err := tx.forListingPair(ctx, d.ListingID, d.ListingType, p.UserID, d.To)
		if err == nil {
			if d.Title != "" && d.Title != deref(row.Title) {
				return nil, apierr.Invalid(apierr.FieldError{Path: "title", Code: "mismatch", Message: "must be the title of your existing conversation about this listing when given", Data: map[string]any{"title": deref(row.Title)}})
			}
			return row, nil
		}
		if !errors.Is(err, errNotFound) {
			return nil, err
		}
	}
	now := s.now().UTC()
	row := &conversationRow{
		ID: ids.New(ctx), Title: nonEmpty(d.Title), ListingID: nonEmpty(d.ListingID), ListingType: nonEmpty(d.ListingType),
		CreatedBy: p.UserID, CreatedAt: now, UpdatedAt: now,
	}
	if err := tx.insertConversation(ctx, row); err != nil {
		return nil, err
	}
	return row, tx.join(ctx, &participantRow{ConversationID: row.ID, UserID: p.UserID, UserName: p.Name, JoinedAt: now, UpdatedAt: now})
}

// notification is the outbox event of a new message: to every participant but the sender.
func notification(c *Conversation, p *auth.Principal, m *messageRow) outbox.Event {
	recipients := make([]string, 0, len(c.Participants))
	for _, pa := range c.Participants {
		if pa.ID != p.UserID {
			recipients = append(recipients, pa.ID)
		}
	}
	sender := p.Name
	if sender == "" {
		sender = p.UserID
	}
	subject := "New message from " + sender
	if c.Title != nil {
		subject += ": " + *c.Title
	}
	return outbox.Event{
		Type: EventMessage, Recipients: recipients, Subject: subject, Body: m.Message,
		Data: map[string]any{
			"conversationId": c.ConversationID, "messageId": m.ID, "seq": m.Seq, "title": c.Title,
			"listingId": c.ListingID, "listingType": c.ListingType,
			"sentById": p.UserID, "sentByName": p.Name, "createdAtUTC": rfc3339(m.CreatedAt),
		},
	}
}

// streamEvent is the live event of a new message: to every participant, the
// sender included (their other devices).
func streamEvent(c *Conversation, m *messageRow) events.Event {
	audiences := make([]string, 0, len(c.Participants))
	for _, pa := range c.Participants {
		audiences = append(audiences, events.User(pa.ID))
	}
	return events.Event{Type: events.TypeMessageCreated, Audiences: audiences, Data: map[string]any{
		"conversationId": c.ConversationID,
		"message":        Message{SentByID: m.SentByID, SentByName: m.SentByName, Message: m.Message, CreatedAtUTC: rfc3339(m.CreatedAt)},
	}}
}

// Get answers a conversation of p with all its messages and marks it read.
func (s *Service) Get(ctx context.Context, p *auth.Principal, id string) (*Conversation, error) {
	row, err := s.store.get(ctx, id, p.UserID)
	return s.read(ctx, p, row, err)
}

// ForListing answers p's most recently active conversation about a listing and
// marks it read.
func (s *Service) ForListing(ctx context.Context, p *auth.Principal, listingID string) (*Conversation, error) {
	row, err := s.store.forListing(ctx, listingID, p.UserID)
	return s.read(ctx, p, row, err)
}

func (s *Service) read(ctx context.Context, p *auth.Principal, row *conversationRow, err error) (*Conversation, error) {
	if errors.Is(err, errNotFound) {
		return nil, apierr.NotFound("conversation")
	}
	if err != nil {
		return nil, apierr.Internal(err)
	}
	convs, err := s.assemble(ctx, s.store, p.UserID, []conversationRow{*row}, 0)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	if err := s.store.markRead(ctx, row.ID, p.UserID, row.MessageCount, ""); err != nil {
		return nil, apierr.Internal(err)
	}
	return &convs[0], nil
}

// List answers a page of p's conversations (those changed after since when
// it is set): the page, then the messages,
// participants and unread counts of the whole page in one query each.
func (s *Service) List(ctx context.Context, p *auth.Principal, pg httpx.Page, since *time.Time) (*Page, error) {
	total, err := s.store.count(ctx, p.UserID, since)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	out := &Page{Docs: []Conversation{}, TotalDocs: total, Limit: pg.Limit, Offset: pg.Offset}
	if pg.Offset >= total {
		return out, nil
	}
	rows, err := s.store.page(ctx, p.UserID, since, pg.SortBy, pg.SortDesc, pg.Limit, pg.Offset)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	if out.Docs, err = s.assemble(ctx, s.store, p.UserID, rows, ListMessages); err != nil {
		return nil, apierr.Internal(err)
	}
	return out, nil
}

// assemble turns rows into answers with a fixed number of queries whatever
// the number of rows (no N+1): messages, participants, unread counts.
func (s *Service) assemble(ctx context.Context, st store, userID string, rows []conversationRow, lastMessages int) ([]Conversation, error) {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	msgs, err := st.messages(ctx, ids, lastMessages)
	if err != nil {
		return nil, fmt.Errorf("load messages: %w", err)
	}
	parts, err := st.participants(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("load participants: %w", err)
	}
	unread, err := st.unread(ctx, ids, userID)
	if err != nil {
		return nil, fmt.Errorf("count unread: %w", err)
	}
	out := make([]Conversation, len(rows))
	for i, r := range rows {
		c := Conversation{
			ConversationID: r.ID, Title: optional(r.Title), ListingID: optional(r.ListingID), ListingType: optional(r.ListingType),
			CreatedAtUTC: rfc3339(r.CreatedAt), UpdatedAtUTC: rfc3339(r.UpdatedAt),
			Messages: make([]Message, 0, len(msgs[r.ID])), Participants: make([]Party, 0, len(parts[r.ID])), Unread: unread[r.ID],
		}
		for _, m := range msgs[r.ID] {
			c.Messages = append(c.Messages, Message{SentByID: m.SentByID, SentByName: m.SentByName, Message: m.Message, CreatedAtUTC: rfc3339(m.CreatedAt)})
		}
		for _, pa := range parts[r.ID] {
			c.Participants = append(c.Participants, Party{ID: pa.UserID, Name: pa.UserName})
		}
		out[i] = c
	}
	return out, nil
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func nonEmpty(s string) *string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return &s
}
