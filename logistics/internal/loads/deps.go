package loads

import (
	"context"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/uptrace/bun"
)

// TEMPORARY stand-ins until feat/files and feat/messaging are merged.

// FileRef is the file reference of the seed.
type FileRef struct {
	Name           string `json:"name"`
	ID             string `json:"id"`
	URL            string `json:"url"`
	UserID         string `json:"userId"`
	UserName       string `json:"userName"`
	OrganisationID string `json:"organisationId"`
	CreatedAtUTC   string `json:"createdAtUTC"`
}

// Event is a notification.
type Event struct {
	Type       string
	Recipients []string
	Subject    string
	Body       string
	Data       any
}

// Files resolves file references.
type Files interface {
	Resolve(ctx context.Context, p *auth.Principal, refs []FileRef) ([]FileRef, []apierr.FieldError, error)
}

// Enqueue writes a notification in the transaction of the change.
type Enqueue func(ctx context.Context, db bun.IDB, e Event) error
