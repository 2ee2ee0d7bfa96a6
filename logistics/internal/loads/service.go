package loads

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/db"
	streamevents "github.com/agritrade/api/platform/events"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/ids"
	"github.com/agritrade/api/platform/logging"
	"github.com/agritrade/api/platform/outbox"
	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
)

// CommodityLookup finds a commodity item of the reference data by its integer
// id, with its default weight unit; found is false for an unknown id.
type CommodityLookup func(ctx context.Context, id int) (c Commodity, found bool, err error)

// Files is what loads need of the file store (*filestore.Service): checking
// the file references of requests.
type Files interface {
	Resolve(ctx context.Context, p *auth.Principal, refs []filestore.Ref) ([]filestore.Ref, []apierr.FieldError, error)
}

// Service holds the rules of loads: validation beyond shape, permissions,
// state transitions and transactions.
type Service struct {
	store       *Store
	commodities CommodityLookup
	files       Files
	log         *logrus.Entry
	now         func() time.Time
}

// NewService wires the service.
func NewService(store *Store, commodities CommodityLookup, files Files, log *logrus.Entry) *Service {
	return &Service{store: store, commodities: commodities, files: files, log: log,
		now: func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }}
}

// MaxIDs caps the ids of one "loads by ids" request.
const MaxIDs = 1000

// Notification types written to the outbox.
const (
	EventSentToDriver  = "load.sent_to_driver"
	EventSentToCarrier = "load.sent_to_carrier"
)

// at returns the collector of item i: "[i]" paths for list bodies, plain
// paths for a single object.
func at(f *apierr.Fields, i int, list bool) *apierr.Fields {
	if list {
		return f.Index(i)
	}
	return f
}

// CreateAsOrganiser creates loads from organiser forms: all or nothing. The
// caller must be a member of every organiser organisation.
func (s *Service) CreateAsOrganiser(ctx context.Context, p *auth.Principal, forms []OrganiserForm, list bool) ([]*Load, error) {
	var f apierr.Fields
	drafts := make([]Draft, len(forms))
	for i := range forms {
		drafts[i] = forms[i].Draft(at(&f, i, list))
	}
	return s.create(ctx, p, drafts, &f, list)
}

// CreateAsCarrier creates loads from carrier forms: all or nothing. The caller
// must be a member of every carrier organisation; the organisation a form
// names as organiser need not be the caller's (a carrier records the loads it
// hauls for its customers), and the load's reference then lives in the
// carrier's reference space, not the organiser's.
func (s *Service) CreateAsCarrier(ctx context.Context, p *auth.Principal, forms []CarrierForm, list bool) ([]*Load, error) {
	var f apierr.Fields
	drafts := make([]Draft, len(forms))
	for i := range forms {
		drafts[i] = forms[i].Draft(at(&f, i, list))
	}
	return s.create(ctx, p, drafts, &f, list)
}

// create checks and inserts drafts, all or nothing: the caller must be a
// member of each draft's creator (403 otherwise, before anything is looked
// up in the caller's name), and each key must be new in its creator's
// reference space (409).
func (s *Service) create(ctx context.Context, p *auth.Principal, drafts []Draft, f *apierr.Fields, list bool) ([]*Load, error) {
	for i := range drafts {
		drafts[i].Validate(at(f, i, list))
	}
	commodities, err := s.lookupCommodities(ctx, drafts, nil, func(i int) *apierr.Fields { return at(f, i, list) })
	if err != nil {
		return nil, err
	}
	files, err := s.resolveFiles(ctx, p, func(i int) []filestore.Ref { return drafts[i].Files }, len(drafts), func(i int) *apierr.Fields { return at(f, i, list) })
	if err != nil {
		return nil, err
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	for i := range drafts {
		if org := drafts[i].Creator(); !p.MemberOf(org) {
			return nil, apierr.Forbidden("you are not a member of organisation %s", org)
		}
	}
	keys := make([]Key, len(drafts))
	for i := range drafts {
		keys[i] = drafts[i].Key()
		if j := slices.Index(keys[:i], keys[i]); j >= 0 {
			return nil, apierr.Conflict("reference %q is used twice in the request (items %d and %d)", keys[i].Reference, j, i)
		}
	}
	now := s.now()
	loads := make([]*Load, len(drafts))
	for i := range drafts {
		loads[i] = NewLoad(ids.New(ctx), &drafts[i], commodities[drafts[i].CommodityID], files[i], p.UserID, now)
	}
	err = s.store.InTx(ctx, func(ctx context.Context, tx *Store) error {
		taken, err := tx.KeysTaken(ctx, keys)
		if err != nil {
			return err
		}
		if len(taken) > 0 {
			return apierr.Conflict("a load of organiser %s with reference %q already exists", taken[0].OrganiserID, taken[0].Reference)
		}
		// Once committed: under an Idempotency-Key the change commits with
		// the key's answer, after this returns, or rolls back (a repeat).
		db.AfterCommit(ctx, func() {
			logging.Ctx(ctx, s.log).WithFields(logrus.Fields{"loads": len(loads), "user": p.UserID}).Debug("loads created")
		})
		return tx.Insert(ctx, loads)
	})
	if db.IsUniqueViolation(err) {
		return nil, apierr.Wrap(err, apierr.CodeConflict, "a load with one of these references already exists for its organiser")
	}
	if err != nil {
		return nil, err
	}
	return loads, nil
}

// lookupCommodities finds the commodity of every draft whose id passed
// validation, asking once per distinct id; memo, when given, carries answers
// across calls (batch imports). Unknown ids are field errors.
func (s *Service) lookupCommodities(ctx context.Context, drafts []Draft, memo map[int]*Commodity, fieldsOf func(i int) *apierr.Fields) (map[int]Commodity, error) {
	if memo == nil {
		memo = map[int]*Commodity{}
	}
	out := map[int]Commodity{}
	for i := range drafts {
		id := drafts[i].CommodityID
		if id == 0 {
			continue
		}
		c, seen := memo[id]
		if !seen {
			found, ok, err := s.commodities(ctx, id)
			if err != nil {
				return nil, apierr.Unavailable(err, "reference data")
			}
			if ok {
				found.ID = id
				c = &found
			}
			memo[id] = c
		}
		if c == nil {
			fieldsOf(i).Add("commodityId", "unknown", "is not a known commodity", map[string]any{"actual": id})
			continue
		}
		out[id] = *c
	}
	return out, nil
}

// resolveFiles resolves the files of n items through the file store, each
// distinct file once and at most filestore.MaxResolveRefs per call (not once
// per item), and files each failure under its item: "[i].files[j].id" in list
// bodies. The same file may go with several items; twice in one item it is a
// field error.
func (s *Service) resolveFiles(ctx context.Context, p *auth.Principal, filesOf func(i int) []filestore.Ref, n int, fieldsOf func(i int) *apierr.Fields) ([][]filestore.Ref, error) {
	var unique []filestore.Ref
	index := map[string]int{}
	for i := 0; i < n; i++ {
		seen := map[string]int{}
		for j, r := range filesOf(i) {
			id := strings.TrimSpace(r.ID)
			fj := fieldsOf(i).At("files").Index(j)
			if k, dup := seen[id]; dup && id != "" {
				fj.Add("id", "duplicate", fmt.Sprintf("is the same file as [%d]", k), map[string]any{"index": k})
				continue
			}
			seen[id] = j
			if _, ok := index[id]; !ok {
				index[id] = len(unique)
				unique = append(unique, filestore.Ref{ID: id})
			}
		}
	}
	resolved := make([]filestore.Ref, len(unique))
	problems := map[int][]apierr.FieldError{}
	for start := 0; start < len(unique); start += filestore.MaxResolveRefs {
		end := min(start+filestore.MaxResolveRefs, len(unique))
		refs, errs, err := s.files.Resolve(ctx, p, unique[start:end])
		if err != nil {
			return nil, err
		}
		for _, fe := range errs {
			k, rest, ok := splitIndex(fe.Path)
			if !ok {
				return nil, apierr.Internal(fmt.Errorf("file store answered a field error at %q", fe.Path))
			}
			fe.Path = strings.TrimPrefix(rest, ".")
			problems[start+k] = append(problems[start+k], fe)
		}
		if len(errs) == 0 {
			copy(resolved[start:end], refs)
		}
	}
	out := make([][]filestore.Ref, n)
	for i := 0; i < n; i++ {
		out[i] = []filestore.Ref{}
		for j, r := range filesOf(i) {
			k := index[strings.TrimSpace(r.ID)]
			if fes, bad := problems[k]; bad {
				fieldsOf(i).At("files").Index(j).Merge(fes)
				continue
			}
			out[i] = append(out[i], resolved[k])
		}
	}
	return out, nil
}

// splitIndex splits "[3].id" into 3 and ".id".
func splitIndex(path string) (int, string, bool) {
	if !strings.HasPrefix(path, "[") {
		return 0, "", false
	}
	end := strings.IndexByte(path, ']')
	if end < 0 {
		return 0, "", false
	}
	k, err := strconv.Atoi(path[1:end])
	if err != nil || k < 0 {
		return 0, "", false
	}
	return k, path[end+1:], true
}

// Search answers a page of the loads the caller sees and the total.
func (s *Service) Search(ctx context.Context, p *auth.Principal, f Filter) ([]*Load, int, error) {
	started := time.Now()
	loads, total, err := s.store.Search(ctx, ViewerOf(p), f)
	if err != nil {
		return nil, 0, err
	}
	if logging.Debugging(s.log) {
		logging.Ctx(ctx, s.log).WithFields(logrus.Fields{"returned": len(loads), "total": total, "duration": time.Since(started).String()}).Debug("loads searched")
	}
	return loads, total, nil
}

// Stream calls fn with every load the caller sees that matches the filter.
func (s *Service) Stream(ctx context.Context, p *auth.Principal, f Filter, fn func(*Load) error) error {
	return s.store.Stream(ctx, ViewerOf(p), f, fn)
}

// Completed streams the caller's completed loads delivered in [from, to], by
// delivery date.
func (s *Service) Completed(ctx context.Context, p *auth.Principal, from, to *time.Time, fn func(*Load) error) error {
	return s.Stream(ctx, p, Filter{From: from, To: to, Status: StatusCompleted, SortBy: SortDeliveryDate}, fn)
}

// Get answers one load the caller sees, else 404.
func (s *Service) Get(ctx context.Context, p *auth.Principal, id string) (*Load, error) {
	found, err := s.store.ByIDs(ctx, ViewerOf(p), []string{id}, false)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, apierr.NotFound("load")
	}
	return found[0], nil
}

// ByIDs answers the loads with these ids that the caller sees, in the order
// asked, each once.
func (s *Service) ByIDs(ctx context.Context, p *auth.Principal, ids []string) ([]*Load, error) {
	ids = unique(ids)
	if len(ids) > MaxIDs {
		var f apierr.Fields
		f.Add("ids", "max_items", fmt.Sprintf("must list at most %d ids", MaxIDs), map[string]any{"max": MaxIDs, "actual": len(ids)})
		return nil, f.Err()
	}
	found, err := s.store.ByIDs(ctx, ViewerOf(p), ids, false)
	if err != nil {
		return nil, err
	}
	return inOrder(found, ids), nil
}

func unique(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// inOrder puts loads in the order of ids, leaving out ids not found.
func inOrder(loads []*Load, ids []string) []*Load {
	byID := make(map[string]*Load, len(loads))
	for _, l := range loads {
		byID[l.ID] = l
	}
	out := make([]*Load, 0, len(loads))
	for _, id := range ids {
		if l, ok := byID[id]; ok {
			out = append(out, l)
		}
	}
	return out
}

// checkLoadIDs records a duplicate load id as a field error: one request
// moves each load once.
// validateList validates each of n list items (item validates the i-th into f
// and returns its load id) and checks no load is named twice; all failures
// come back in one error.
func validateList(n int, item func(i int, f *apierr.Fields) string) ([]string, error) {
	var f apierr.Fields
	ids := make([]string, n)
	for i := range n {
		ids[i] = item(i, f.Index(i))
	}
	checkLoadIDs(&f, ids)
	return ids, f.Err()
}

func checkLoadIDs(f *apierr.Fields, ids []string) {
	for i, id := range ids {
		if id != "" && slices.Index(ids[:i], id) >= 0 {
			f.Index(i).Add("loadId", "duplicate", "names a load already named earlier in the list", nil)
		}
	}
}

// modify loads the named loads the caller sees for update, applies change to
// each (in the order named) and writes them with the notifications change
// returns, in one transaction. An id the caller does not see answers 404.
func (s *Service) modify(ctx context.Context, p *auth.Principal, ids []string, change func(i int, l *Load) (*outbox.Event, error)) ([]*Load, error) {
	var out []*Load
	err := s.store.InTx(ctx, func(ctx context.Context, tx *Store) error {
		found, err := tx.ByIDs(ctx, ViewerOf(p), ids, true)
		if err != nil {
			return err
		}
		out = inOrder(found, ids)
		if len(out) != len(ids) {
			for _, id := range ids {
				if !slices.ContainsFunc(out, func(l *Load) bool { return l.ID == id }) {
					return apierr.New(apierr.CodeNotFound, "load %s not found", id)
				}
			}
		}
		var events []outbox.Event
		for i, l := range out {
			ev, err := change(i, l)
			if err != nil {
				return err
			}
			if ev != nil {
				events = append(events, *ev)
			}
		}
		if err := tx.Update(ctx, out); err != nil {
			return err
		}
		for _, ev := range events {
			if err := tx.Enqueue(ctx, ev); err != nil {
				return err
			}
		}
		for _, l := range out {
			if err := tx.AppendEvent(ctx, streamEvent(l)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	logging.Ctx(ctx, s.log).WithFields(logrus.Fields{"loads": len(out), "user": p.UserID}).Debug("loads changed")
	return out, nil
}

// streamEvent is the live event of a changed load, for everyone who sees it:
// the organiser's and the carrier's members and the driver.
func streamEvent(l *Load) streamevents.Event {
	audiences := []string{streamevents.Org(l.Organiser.ID)}
	if l.Carrier != nil {
		audiences = append(audiences, streamevents.Org(l.Carrier.ID))
	}
	if l.Driver != nil {
		audiences = append(audiences, streamevents.User(l.Driver.ID))
	}
	return streamevents.Event{Type: streamevents.TypeLoadUpdated, Audiences: audiences, Data: map[string]any{
		"loadId": l.ID, "reference": l.Reference, "status": l.Status, "updatedAtUTC": l.UpdatedAt.UTC().Format(time.RFC3339),
	}}
}

// SendToDriver assigns each load to its driver, puts it in transit and
// notifies the driver, all or nothing.
func (s *Service) SendToDriver(ctx context.Context, p *auth.Principal, items []DriverAssignment) (int, error) {
	ids, err := validateList(len(items), func(i int, f *apierr.Fields) string {
		items[i].Validate(f)
		return items[i].LoadID
	})
	if err != nil {
		return 0, err
	}
	now := s.now()
	done, err := s.modify(ctx, p, ids, func(i int, l *Load) (*outbox.Event, error) {
		a := items[i]
		if err := l.SendToDriver(p, Party{ID: a.DriverID, Name: a.DriverName}, now); err != nil {
			return nil, err
		}
		return &outbox.Event{
			Type: EventSentToDriver, Recipients: []string{a.DriverID},
			Subject: "Load " + l.Reference + " was sent to you",
			Body:    fmt.Sprintf("%s sent you load %s: %s, delivery %s%s.", senderName(p), l.Reference, l.Commodity.Name, l.DeliveryDateISO, route(l)),
			Data:    eventData(l, p),
		}, nil
	})
	return len(done), err
}

// SendToCarrier sets the carrier of each load and notifies the carrier (its
// organisation id is the recipient), all or nothing.
func (s *Service) SendToCarrier(ctx context.Context, p *auth.Principal, items []CarrierAssignment) (int, error) {
	ids, err := validateList(len(items), func(i int, f *apierr.Fields) string {
		items[i].Validate(f)
		return items[i].LoadID
	})
	if err != nil {
		return 0, err
	}
	now := s.now()
	done, err := s.modify(ctx, p, ids, func(i int, l *Load) (*outbox.Event, error) {
		a := items[i]
		if err := l.SendToCarrier(p, Party{ID: a.CarrierID, Name: a.CarrierName}, now); err != nil {
			return nil, err
		}
		return &outbox.Event{
			Type: EventSentToCarrier, Recipients: []string{a.CarrierID},
			Subject: "Load " + l.Reference + " was sent to you",
			Body:    fmt.Sprintf("%s sent load %s to %s: %s, delivery %s%s.", l.Organiser.Name, l.Reference, l.Carrier.Name, l.Commodity.Name, l.DeliveryDateISO, route(l)),
			Data:    eventData(l, p),
		}, nil
	})
	return len(done), err
}

func senderName(p *auth.Principal) string {
	if p.OrgName != "" {
		return p.OrgName
	}
	return p.Name
}

func route(l *Load) string {
	if l.PickupPostcode == "" && l.DropoffPostcode == "" {
		return ""
	}
	return fmt.Sprintf(", from %s to %s", orDash(l.PickupPostcode), orDash(l.DropoffPostcode))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// eventData is the JSON payload of hand-off notifications.
func eventData(l *Load, p *auth.Principal) map[string]any {
	d := map[string]any{
		"loadId": l.ID, "reference": l.Reference, "status": l.Status, "organiser": l.Organiser,
		"commodity":       map[string]any{"id": l.Commodity.ID, "name": l.Commodity.Name},
		"deliveryDateISO": l.DeliveryDateISO, "pickupPostcode": l.PickupPostcode, "dropoffPostcode": l.DropoffPostcode,
		"sentBy": map[string]any{"userId": p.UserID, "name": p.Name, "organisationId": p.OrgID},
	}
	if l.Carrier != nil {
		d["carrier"] = *l.Carrier
	}
	if l.Driver != nil {
		d["driver"] = *l.Driver
	}
	return d
}

// ProveDelivery records proofs of delivery (list form), all or nothing, and
// answers the completed loads in the order given.
func (s *Service) ProveDelivery(ctx context.Context, p *auth.Principal, forms []ProofForm) ([]*Load, error) {
	return s.prove(ctx, p, forms, true)
}

// ProveDeliveryOf records the proof of delivery of load id; a loadId in the
// body must name the same load.
func (s *Service) ProveDeliveryOf(ctx context.Context, p *auth.Principal, id string, form ProofForm) (*Load, error) {
	if l := strings.TrimSpace(form.LoadID); l != "" && l != id {
		var f apierr.Fields
		f.Add("loadId", "mismatch", "must be the load id of the path when given", map[string]any{"expected": id, "actual": l})
		form.LoadID = id
		form.Validate(&f)
		return nil, f.Err()
	}
	form.LoadID = id
	done, err := s.prove(ctx, p, []ProofForm{form}, false)
	if err != nil {
		return nil, err
	}
	return done[0], nil
}

func (s *Service) prove(ctx context.Context, p *auth.Principal, forms []ProofForm, list bool) ([]*Load, error) {
	var f apierr.Fields
	proofs := make([]Proof, len(forms))
	ids := make([]string, len(forms))
	for i := range forms {
		proofs[i] = forms[i].Validate(at(&f, i, list))
		ids[i] = forms[i].LoadID
	}
	if list {
		checkLoadIDs(&f, ids)
	}
	files, err := s.resolveFiles(ctx, p, func(i int) []filestore.Ref { return proofs[i].Files }, len(proofs), func(i int) *apierr.Fields { return at(&f, i, list) })
	if err != nil {
		return nil, err
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	now := s.now()
	return s.modify(ctx, p, ids, func(i int, l *Load) (*outbox.Event, error) {
		proof := proofs[i]
		proof.Files = files[i]
		return nil, l.Complete(p, proof, now)
	})
}

// ImportAction says what an import row did.
type ImportAction string

// What an import row can do.
const (
	ImportCreated   ImportAction = "created"
	ImportUpdated   ImportAction = "updated"
	ImportUnchanged ImportAction = "unchanged"
)

// ImportOutcome is the result of one imported draft: its load id and action,
// or why it changed nothing (a validation error, 403 or 409).
type ImportOutcome struct {
	ID     string
	Action ImportAction
	Err    error
}

// Importer upserts the rows of one upload, batch by batch, inside one
// transaction (see Import).
type Importer struct {
	s    *Service
	tx   *Store
	p    *auth.Principal
	memo map[int]*Commodity
	now  time.Time
}

// Import runs fn with an importer whose writes commit together when fn returns
// nil and roll back when it fails: a file that turns out unreadable or too
// large half way (or a client that goes away) changes nothing. Rows are still
// judged one by one: a row that fails is reported and the others apply.
func (s *Service) Import(ctx context.Context, p *auth.Principal, fn func(ctx context.Context, imp *Importer) error) error {
	err := s.store.InTx(ctx, func(ctx context.Context, tx *Store) error {
		return fn(ctx, &Importer{s: s, tx: tx, p: p, memo: map[int]*Commodity{}, now: s.now()})
	})
	if err != nil {
		return err
	}
	return nil
}

// Upsert writes drafts by (organiser, reference) in the organiser's own
// reference space: a new key creates a load, a known one updates it unless
// nothing changed, and a completed load never changes. Loads that carriers
// created naming the organiser are in the carriers' spaces: never touched. Each draft stands alone: one that fails is reported (a validation
// error, 403 or 409) and changes nothing. Keys must not repeat within one
// call. err is for infrastructure failures.
func (imp *Importer) Upsert(ctx context.Context, drafts []Draft) ([]ImportOutcome, error) {
	s, p, now := imp.s, imp.p, imp.now
	out := make([]ImportOutcome, len(drafts))
	fields := make([]apierr.Fields, len(drafts))
	for i := range drafts {
		drafts[i].Validate(&fields[i])
	}
	commodities, err := s.lookupCommodities(ctx, drafts, imp.memo, func(i int) *apierr.Fields { return &fields[i] })
	if err != nil {
		return nil, err
	}
	var keys []Key
	for i := range drafts {
		switch {
		case !fields[i].Empty():
			out[i].Err = fields[i].Err()
		case !p.MemberOf(drafts[i].Creator()):
			out[i].Err = apierr.Forbidden("you are not a member of organisation %s", drafts[i].Creator())
		case slices.Contains(keys, drafts[i].Key()):
			out[i].Err = apierr.Conflict("reference %q is repeated", drafts[i].Reference)
		default:
			keys = append(keys, drafts[i].Key())
		}
	}
	existing, err := imp.tx.ByKeys(ctx, keys)
	if err != nil {
		return nil, err
	}
	byKey := make(map[Key]*Load, len(existing))
	for _, l := range existing {
		byKey[l.Key()] = l
	}
	var write []*Load
	writer := map[Key]int{}
	for i := range drafts {
		if out[i].Err != nil {
			continue
		}
		d := &drafts[i]
		c := commodities[d.CommodityID]
		l, ok := byKey[d.Key()]
		if !ok {
			l = NewLoad(uuid.Must(uuid.NewV7()).String(), d, c, []filestore.Ref{}, p.UserID, now)
			out[i] = ImportOutcome{ID: l.ID, Action: ImportCreated}
		} else {
			changed, err := l.Reapply(d, c, now)
			out[i] = ImportOutcome{ID: l.ID, Action: ImportUpdated, Err: err}
			if err != nil || !changed {
				out[i].Action = ImportUnchanged
				continue
			}
		}
		write = append(write, l)
		writer[d.Key()] = i
	}
	written, err := imp.tx.Upsert(ctx, write)
	if err != nil {
		return nil, err
	}
	for key, i := range writer {
		id, ok := written[key]
		if !ok {
			// Completed by someone else since it was read.
			out[i] = ImportOutcome{Err: apierr.Conflict("load %s is completed and can no longer change", key.Reference)}
			continue
		}
		out[i].ID = id
	}
	// A row that changed a load is a change like any other: its followers
	// (organiser, carrier, driver) get load.updated, in the import's
	// transaction. Creations are not announced, as with the create routes.
	for _, l := range write {
		if i := writer[l.Key()]; out[i].Action == ImportUpdated && out[i].Err == nil {
			if err := imp.tx.AppendEvent(ctx, streamEvent(l)); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
