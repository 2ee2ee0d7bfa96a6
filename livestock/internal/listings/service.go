package listings

import (
	"context"
	"time"

	"github.com/agritrade/api/livestock/internal/categories"
	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/ids"
	"github.com/agritrade/api/platform/logging"
	"github.com/sirupsen/logrus"
)

// FileResolver checks file references and answers their canonical form
// (filestore.Service in production).
type FileResolver interface {
	Resolve(ctx context.Context, p *auth.Principal, refs []filestore.Ref) ([]filestore.Ref, []apierr.FieldError, error)
}

// CategoryChecker tells which category ids are not categories of a kind
// (categories.Service in production).
type CategoryChecker interface {
	Check(ctx context.Context, kind categories.Kind, ids []int) ([]apierr.FieldError, error)
}

// Service holds the rules of listings: who may see and change what, the
// status transitions, and reports.
type Service struct {
	store *Store
	files FileResolver
	cats  CategoryChecker
	log   *logrus.Entry
	now   func() time.Time
	// alertWake wakes the alerts runner when a listing was queued here.
	alertWake chan struct{}
}

// NewService returns the service.
func NewService(store *Store, files FileResolver, cats CategoryChecker, log *logrus.Entry) *Service {
	return &Service{store: store, files: files, cats: cats, log: log, now: func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) },
		alertWake: make(chan struct{}, 1)}
}

func viewer(p *auth.Principal) Viewer { return Viewer{UserID: p.UserID, Orgs: p.Organisations()} }

// Create validates a create body of a kind and stores the listing for the
// caller's current organisation; it answers the new id. Nothing is written
// unless every field passes.
func (s *Service) Create(ctx context.Context, p *auth.Principal, kind categories.Kind, raw []byte) (string, error) {
	if p.OrgID == "" {
		return "", apierr.Forbidden("creating a listing needs a current organisation (the org claim)")
	}
	d, f, err := ParseDraft(kind, raw)
	if err != nil {
		return "", err
	}
	if d.Files, err = s.checkReferences(ctx, p, kind, f, d.CategoryIDs, d.Files, d.filesValid); err != nil {
		return "", err
	}
	if err := f.Err(); err != nil {
		return "", err
	}
	now := s.now()
	l := &Listing{
		ID: ids.New(ctx), UserID: p.UserID, OrganisationID: p.OrgID, OrganisationName: p.OrgName,
		Kind: kind, Type: d.Type, Status: StatusActive, CategoryIDs: d.CategoryIDs, Location: d.Location, Price: d.Price,
		Files: d.Files, Description: d.Description, Tags: d.Tags, Properties: d.Properties, CreatedAt: now, UpdatedAt: now,
	}
	if d.IsDraft {
		l.Status = StatusDraft
	}
	flat, err := flatten(l)
	if err != nil {
		return "", err
	}
	err = s.store.InTx(ctx, func(ctx context.Context, tx *Store) error {
		if err := tx.Insert(ctx, flat); err != nil {
			return err
		}
		// Once committed: under an Idempotency-Key the change commits with
		// the key's answer, after this returns, or rolls back (a repeat).
		if logging.Enabled(s.log, logrus.InfoLevel) {
			db.AfterCommit(ctx, func() {
				logging.Ctx(ctx, s.log).WithField("listing", l.ID).WithField("kind", kind).WithField("status", l.Status).Info("listing created")
			})
		}
		if l.Status != StatusActive {
			return nil
		}
		return s.queueAlerts(ctx, tx, l)
	})
	if err != nil {
		return "", err
	}
	return l.ID, nil
}

// checkReferences completes f with the checks that need other data: the
// categories must be of the kind, the files (when well-formed) readable by p.
// It answers the canonical file references.
func (s *Service) checkReferences(ctx context.Context, p *auth.Principal, kind categories.Kind, f *apierr.Fields, ids []int, files []filestore.Ref, filesValid bool) ([]filestore.Ref, error) {
	if len(ids) > 0 {
		errs, err := s.cats.Check(ctx, kind, ids)
		if err != nil {
			return nil, err
		}
		f.At("categoryIds").Merge(errs)
	}
	if len(files) == 0 || !filesValid {
		return []filestore.Ref{}, nil
	}
	resolved, errs, err := s.files.Resolve(ctx, p, files)
	if err != nil {
		return nil, err
	}
	f.At("files").Merge(errs)
	return resolved, nil
}

// Get answers a listing p may see: active ones for everyone, drafts and closed
// ones for the owner's organisation; others answer 404.
func (s *Service) Get(ctx context.Context, p *auth.Principal, id string) (*Listing, error) {
	l, err := s.store.Get(ctx, id, p.UserID, false)
	if err != nil {
		return nil, err
	}
	if l == nil || !l.VisibleTo(p) {
		return nil, apierr.NotFound("listing")
	}
	return l, nil
}

// Update applies an edit to a draft or active listing of p's organisation.
// isDraft false publishes a draft; true on an active listing, and any edit of a
// closed listing, answer 409.
func (s *Service) Update(ctx context.Context, p *auth.Principal, id string, raw []byte) (*Listing, error) {
	cur, err := s.store.Get(ctx, id, p.UserID, false)
	if err != nil {
		return nil, err
	}
	if cur == nil || !p.MemberOf(cur.OrganisationID) {
		return nil, apierr.NotFound("listing")
	}
	patch, f, err := ParsePatch(cur.Kind, raw)
	if err != nil {
		return nil, err
	}
	if patch.SetFiles {
		if patch.Files, err = s.checkReferences(ctx, p, cur.Kind, f, nil, patch.Files, true); err != nil {
			return nil, err
		}
	}
	if patch.SetCategories {
		if _, err = s.checkReferences(ctx, p, cur.Kind, f, patch.CategoryIDs, nil, false); err != nil {
			return nil, err
		}
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	var out *Listing
	err = s.store.InTx(ctx, func(ctx context.Context, tx *Store) error {
		l, err := tx.Get(ctx, id, p.UserID, true)
		if err != nil {
			return err
		}
		if l == nil {
			return apierr.NotFound("listing")
		}
		wasDraft := l.Status == StatusDraft
		if err := apply(l, patch); err != nil {
			return err
		}
		l.UpdatedAt = s.now()
		out = l
		if err := tx.Update(ctx, l); err != nil {
			return err
		}
		if wasDraft && l.Status == StatusActive {
			// Published: a newly active listing, matched like a new one.
			err = s.queueAlerts(ctx, tx, l)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	logging.Ctx(ctx, s.log).WithField("listing", id).WithField("status", out.Status).Info("listing updated")
	return out, nil
}

// apply changes l by the patch, checking the status rules.
func apply(l *Listing, p *Patch) error {
	if l.Status != StatusDraft && l.Status != StatusActive {
		return apierr.Conflict("the listing is %s; only drafts and active listings can be edited", l.Status)
	}
	if p.IsDraft != nil {
		switch {
		case *p.IsDraft && l.Status == StatusActive:
			return apierr.Conflict("an active listing cannot go back to draft")
		case !*p.IsDraft:
			l.Status = StatusActive
		}
	}
	if p.Description != nil {
		l.Description = *p.Description
	}
	if p.Price != nil {
		l.Price = *p.Price
	}
	if p.SetTags {
		l.Tags = p.Tags
	}
	if p.SetFiles {
		l.Files = p.Files
	}
	if p.SetLocation {
		l.Location = p.Location
	}
	if p.SetCategories {
		l.CategoryIDs = p.CategoryIDs
	}
	if p.SetProperties {
		l.Properties = p.Properties
	}
	return nil
}

// Close closes an active listing of p's organisation with the status of the
// body (API.md transitions; others answer 409).
func (s *Service) Close(ctx context.Context, p *auth.Principal, id string, raw []byte) error {
	status, err := ParseClose(raw)
	if err != nil {
		return err
	}
	err = s.store.InTx(ctx, func(ctx context.Context, tx *Store) error {
		l, err := tx.Get(ctx, id, p.UserID, true)
		if err != nil {
			return err
		}
		if l == nil || !p.MemberOf(l.OrganisationID) {
			return apierr.NotFound("listing")
		}
		if err := l.CloseAs(status); err != nil {
			return err
		}
		ok, err := tx.Close(ctx, id, status, s.now())
		if err != nil {
			return err
		}
		if !ok {
			return apierr.Conflict("the listing is no longer active")
		}
		return nil
	})
	if err != nil {
		return err
	}
	logging.Ctx(ctx, s.log).WithField("listing", id).WithField("status", status).Info("listing closed")
	return nil
}

// Report records p's report of a listing p can see and does not own. The
// listing leaves search once reportsToHide distinct users have open reports on
// it. The listing row is locked first so that concurrent reports count each other.
func (s *Service) Report(ctx context.Context, p *auth.Principal, id string, raw []byte) error {
	reason, message, err := ParseReport(raw)
	if err != nil {
		return err
	}
	hidden := false
	err = s.store.InTx(ctx, func(ctx context.Context, tx *Store) error {
		l, err := tx.Get(ctx, id, p.UserID, true)
		if err != nil {
			return err
		}
		if l == nil || !l.VisibleTo(p) || p.MemberOf(l.OrganisationID) {
			return apierr.NotFound("listing")
		}
		dup, err := tx.HasReport(ctx, id, p.UserID)
		if err != nil {
			return err
		}
		if dup {
			return apierr.Conflict("you have already reported this listing")
		}
		r := &Report{ID: ids.New(ctx), ListingID: id, UserID: p.UserID, UserName: p.Name,
			OrganisationID: p.OrgID, Reason: reason, Message: message, CreatedAt: s.now()}
		if err := tx.InsertReport(ctx, r); err != nil {
			if db.IsUniqueViolation(err) {
				return apierr.Conflict("you have already reported this listing")
			}
			return err
		}
		n, err := tx.OpenReporters(ctx, id)
		if err != nil {
			return err
		}
		if n >= reportsToHide && !l.Hidden {
			hidden = true
			return tx.SetHidden(ctx, id, true)
		}
		return nil
	})
	if err != nil {
		return err
	}
	entry := logging.Ctx(ctx, s.log).WithField("listing", id).WithField("reason", reason)
	entry.Info("listing reported")
	if hidden {
		entry.Warn("listing hidden from search until an admin reviews its reports")
	}
	return nil
}

// Wishlist puts a listing p can see on p's wishlist (on) or takes one off.
// Taking off also works for a listing p no longer sees (closed since) as long
// as it is on the wishlist; otherwise an invisible listing answers 404.
func (s *Service) Wishlist(ctx context.Context, p *auth.Principal, id string, on bool) error {
	l, err := s.store.Get(ctx, id, p.UserID, false)
	if err != nil {
		return err
	}
	if l == nil || (!l.VisibleTo(p) && (!l.IsWishlisted || on)) {
		return apierr.NotFound("listing")
	}
	if on {
		err = s.store.AddWish(ctx, p.UserID, id, s.now())
	} else {
		err = s.store.RemoveWish(ctx, p.UserID, id)
	}
	return err
}

// Search answers a page of the listings p may see that match, and the total.
func (s *Service) Search(ctx context.Context, p *auth.Principal, sr Search) ([]*Listing, int, error) {
	if !logging.Debugging(s.log) {
		return s.store.Search(ctx, viewer(p), sr)
	}
	started := time.Now()
	out, total, err := s.store.Search(ctx, viewer(p), sr)
	logging.Ctx(ctx, s.log).WithFields(logrus.Fields{"returned": len(out), "total": total, "distance": sr.Near != nil, "sortBy": sr.Page.SortBy, "duration": time.Since(started).String()}).Debug("listings searched")
	return out, total, err
}

// Facets is the answer of a search with docs=false.
type Facets struct {
	TotalDocs int                     `json:"totalDocs"`
	Filters   map[string][]FacetValue `json:"filters"`
}

// Facets counts the matches and, for each filter, its values among the
// listings matching all the other filters.
func (s *Service) Facets(ctx context.Context, p *auth.Principal, f Filter) (*Facets, error) {
	total, err := s.store.Count(ctx, viewer(p), f)
	if err != nil {
		return nil, err
	}
	counts, err := s.store.Facets(ctx, viewer(p), f)
	if err != nil {
		return nil, err
	}
	return &Facets{TotalDocs: total, Filters: counts}, nil
}

// Stream calls fn with every listing of a search (CSV export).
func (s *Service) Stream(ctx context.Context, p *auth.Principal, sr Search, fn func(*Listing) error) error {
	return s.store.Stream(ctx, viewer(p), sr, fn)
}

// Reports answers a page of reports for moderation, and the total.
func (s *Service) Reports(ctx context.Context, f ReportFilter, limit, offset int, desc bool) ([]*Report, int, error) {
	list, total, err := s.store.Reports(ctx, f, limit, offset, desc)
	return list, total, err
}

// Review closes the open reports of a listing with an admin's decision: clear
// shows it in search again; remove cancels it (when draft or active) and keeps
// it hidden. A listing without open reports answers 409.
func (s *Service) Review(ctx context.Context, admin *auth.Principal, id string, raw []byte) error {
	decision, err := ParseReview(raw)
	if err != nil {
		return err
	}
	err = s.store.InTx(ctx, func(ctx context.Context, tx *Store) error {
		l, err := tx.Get(ctx, id, admin.UserID, true)
		if err != nil {
			return err
		}
		if l == nil {
			return apierr.NotFound("listing")
		}
		open, err := tx.OpenReporters(ctx, id)
		if err != nil {
			return err
		}
		if open == 0 {
			return apierr.Conflict("the listing has no open reports")
		}
		now := s.now()
		if err := tx.ReviewReports(ctx, id, admin.UserID, decision, now); err != nil {
			return err
		}
		if decision == DecisionClear {
			return tx.SetHidden(ctx, id, false)
		}
		if l.Status == StatusActive || l.Status == StatusDraft {
			l.Status = StatusCancelled
			l.UpdatedAt = now
			l.ClosedAt = &now
		}
		l.Hidden = true
		return tx.Update(ctx, l)
	})
	if err != nil {
		return err
	}
	logging.Ctx(ctx, s.log).WithField("listing", id).WithField("decision", decision).WithField("admin", admin.UserID).Info("listing reports reviewed")
	return nil
}
