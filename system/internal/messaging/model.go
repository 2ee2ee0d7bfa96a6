// Package messaging is the conversations feature of the System module:
// conversations between users, optionally about a listing, with their
// messages, participants and the caller's unread counts. Every new message
// notifies the other participants through the transactional outbox.
package messaging

import (
	"strings"
	"unicode"

	"github.com/agritrade/api/platform/apierr"
)

// Kinds of listing a conversation can be about.
const (
	ListingLivestock = "livestock"
	ListingCrop      = "crop"
)

// Limits of the message body (also in openapi.yaml).
const (
	MaxMessageLen = 5000
	MaxTitleLen   = 200
	// MaxIDLen bounds user, listing and conversation ids coming from clients.
	MaxIDLen = 128
)

// EventMessage is the outbox event type of a new message.
const EventMessage = "conversation.message"

// Message is one message of a conversation.
type Message struct {
	SentByID     string `json:"sentById"`
	SentByName   string `json:"sentByName"`
	Message      string `json:"message"`
	CreatedAtUTC string `json:"createdAtUTC"`
}

// Party is a participant.
type Party struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Conversation is the seed's conversation, plus participants, the time of the
// last message and the caller's unread count.
type Conversation struct {
	Messages       []Message `json:"messages"`
	ListingID      *string   `json:"listingId"`
	ListingType    *string   `json:"listingType"`
	ConversationID string    `json:"conversationId"`
	CreatedAtUTC   string    `json:"createdAtUTC"`
	Title          *string   `json:"title"`
	UpdatedAtUTC   string    `json:"updatedAtUTC"`
	Participants   []Party   `json:"participants"`
	// Unread counts the messages of others the caller had not read before this answer.
	Unread int `json:"unread"`
}

// Page is the seed's conversation page.
type Page struct {
	Docs      []Conversation `json:"docs"`
	TotalDocs int            `json:"totalDocs"`
	Limit     int            `json:"limit"`
	Offset    int            `json:"offset"`
}

// MessageInput is the body of "create a conversation from a message" and of
// "add a message to a conversation".
type MessageInput struct {
	To             string  `json:"to"`
	Message        string  `json:"message"`
	ListingID      *string `json:"listingId"`
	ListingType    *string `json:"listingType"`
	ConversationID *string `json:"conversationId"`
	Title          *string `json:"title"`
}

// Draft is a validated message: ids trimmed, optional values "" when absent.
type Draft struct {
	To             string
	Text           string
	ListingID      string
	ListingType    string
	ConversationID string
	Title          string
}

// NewDraft validates a message sent by sender, reporting every failing field.
func NewDraft(in MessageInput, sender string) (Draft, error) {
	var f apierr.Fields
	d := Draft{
		To: strings.TrimSpace(in.To), Text: in.Message,
		ListingID: trimmed(in.ListingID), ListingType: trimmed(in.ListingType),
		ConversationID: trimmed(in.ConversationID), Title: trimmed(in.Title),
	}
	if f.Required("to", d.To) && f.MaxLen("to", d.To, MaxIDLen) {
		f.Check(d.To != sender, "to", "not_self", "must be another user than the sender")
		f.Check(printable(d.To), "to", "format", "must not contain control characters")
	}
	if f.Required("message", d.Text) {
		f.MaxLen("message", d.Text, MaxMessageLen)
	}
	if d.ListingID != "" {
		f.MaxLen("listingId", d.ListingID, MaxIDLen)
		f.Check(printable(d.ListingID), "listingId", "format", "must not contain control characters")
		if f.Check(d.ListingType != "", "listingType", "required", "is required with listingId") {
			f.OneOf("listingType", d.ListingType, ListingLivestock, ListingCrop)
		}
	} else if d.ListingType != "" {
		f.OneOf("listingType", d.ListingType, ListingLivestock, ListingCrop)
		f.Add("listingId", "required", "is required with listingType", nil)
	}
	if d.ConversationID != "" {
		f.MaxLen("conversationId", d.ConversationID, MaxIDLen)
	}
	f.MaxLen("title", d.Title, MaxTitleLen)
	f.Check(printable(d.Title), "title", "format", "must not contain control characters")
	return d, f.Err()
}

func trimmed(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}

func printable(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) < 0
}

// optional turns "" into nil for the nullable fields of the answer.
func optional(s *string) *string {
	if s == nil || *s == "" {
		return nil
	}
	v := *s
	return &v
}
