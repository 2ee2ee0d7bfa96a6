package experts

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/outbox"
	"github.com/google/uuid"
)

// Files is what the feature needs of the file store (*filestore.Service).
type Files interface {
	// Resolve checks references exist, are active and readable by p.
	Resolve(ctx context.Context, p *auth.Principal, refs []filestore.Ref) ([]filestore.Ref, []apierr.FieldError, error)
	// Records loads the records of readable files in one query.
	Records(ctx context.Context, p *auth.Principal, ids []string) (map[string]*filestore.Record, error)
}

// Request is a stored question or grain-sample request.
type Request struct {
	ID               string
	Kind             string
	Status           string
	Question         string
	Files            []filestore.Ref
	UserID           string
	UserName         string
	OrganisationID   string
	OrganisationName string
	CreatedAt        time.Time
}

// Service records requests and notifies the experts.
type Service struct {
	files Files
	store store
	now   func() time.Time
}

// NewService makes the service.
func NewService(st store, files Files) *Service {
	return &Service{store: st, files: files, now: time.Now}
}

// Submit checks the draft's files (readable by p; for a grain sample each an
// image or a document), then stores the request and its notification in one
// transaction. Every failing field is reported at once; nothing is stored then.
func (s *Service) Submit(ctx context.Context, p *auth.Principal, d Draft) (*Request, error) {
	var refs []filestore.Ref
	if d.filesOK && len(d.Refs) > 0 {
		canonical, errs, err := s.files.Resolve(ctx, p, d.Refs)
		if err != nil {
			return nil, apierr.Internal(fmt.Errorf("resolve files: %w", err))
		}
		d.Fields.At("files").Merge(errs)
		if len(errs) == 0 {
			refs = canonical
			if d.Kind == KindGrainSample {
				if err := s.checkTypes(ctx, p, refs, d.Fields.At("files")); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := d.Fields.Err(); err != nil {
		return nil, err
	}
	if refs == nil {
		refs = []filestore.Ref{}
	}
	filesJSON, err := json.Marshal(refs)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	req := &Request{
		ID: uuid.Must(uuid.NewV7()).String(), Kind: d.Kind, Status: StatusOpen, Question: d.Question, Files: refs,
		UserID: p.UserID, UserName: p.Name, OrganisationID: p.OrgID, OrganisationName: p.OrgName, CreatedAt: s.now().UTC(),
	}
	row := &requestRow{
		ID: req.ID, Kind: req.Kind, Status: req.Status, Question: req.Question, Files: string(filesJSON), UserID: req.UserID,
		UserName: req.UserName, OrganisationID: req.OrganisationID, OrganisationName: req.OrganisationName, CreatedAt: req.CreatedAt,
	}
	err = s.store.InTx(ctx, func(ctx context.Context, tx store) error {
		if err := tx.insert(ctx, row); err != nil {
			return err
		}
		return tx.Enqueue(ctx, notification(req))
	})
	if err != nil {
		return nil, apierr.Internal(err)
	}
	return req, nil
}

// checkTypes records a field error for each file that is not an image or a document.
func (s *Service) checkTypes(ctx context.Context, p *auth.Principal, refs []filestore.Ref, f *apierr.Fields) error {
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	recs, err := s.files.Records(ctx, p, ids)
	if err != nil {
		return apierr.Internal(fmt.Errorf("load file records: %w", err))
	}
	for i, r := range refs {
		rec := recs[r.ID]
		switch {
		case rec == nil: // archived since Resolve
			f.Index(i).Add("id", "not_found", "file not found", map[string]any{"id": r.ID})
		case !IsImageOrDocument(rec.ContentType):
			f.Index(i).Add("id", "file_type", "must be an image or a document, not "+rec.ContentType, map[string]any{"contentType": rec.ContentType})
		}
	}
	return nil
}

// notification is the outbox event of a request, for the experts' channel.
func notification(r *Request) outbox.Event {
	who := r.UserName
	if who == "" {
		who = r.UserID
	}
	if r.OrganisationName != "" {
		who += " (" + r.OrganisationName + ")"
	}
	var body strings.Builder
	typ, subject := EventQuestion, "Question for an expert from "+who
	if r.Kind == KindGrainSample {
		typ, subject = EventGrainSample, "Grain sample to analyse from "+who
	} else {
		body.WriteString(r.Question)
		body.WriteString("\n")
	}
	if len(r.Files) > 0 {
		body.WriteString("\nFiles:\n")
		for _, f := range r.Files {
			fmt.Fprintf(&body, "- %s %s\n", f.Name, f.URL)
		}
	}
	return outbox.Event{
		Type: typ, Subject: subject, Body: body.String(),
		Data: map[string]any{
			"id": r.ID, "kind": r.Kind, "status": r.Status, "question": r.Question, "files": r.Files,
			"userId": r.UserID, "userName": r.UserName, "organisationId": r.OrganisationID,
			"createdAtUTC": r.CreatedAt.Format(time.RFC3339),
		},
	}
}

// Get answers a stored request (for tests and operators; no route reads requests yet).
func (s *Service) Get(ctx context.Context, id string) (*Request, error) {
	row, err := s.store.get(ctx, id)
	if err != nil {
		return nil, err
	}
	var files []filestore.Ref
	if err := json.Unmarshal([]byte(row.Files), &files); err != nil {
		return nil, err
	}
	return &Request{
		ID: row.ID, Kind: row.Kind, Status: row.Status, Question: row.Question, Files: files, UserID: row.UserID,
		UserName: row.UserName, OrganisationID: row.OrganisationID, OrganisationName: row.OrganisationName, CreatedAt: row.CreatedAt,
	}, nil
}
