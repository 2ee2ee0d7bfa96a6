// Package loads is the Logistics module's load feature: loads (haulage jobs)
// created by organisers and carriers, searched and exported, handed to drivers
// and carriers, and completed by a proof of delivery.
package loads

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/httpx"
)

// Status is where a load is in its life.
type Status string

// The states of a load: upcoming (created) → in-transit (sent to a driver) →
// completed (proof of delivery recorded).
const (
	StatusUpcoming  Status = "upcoming"
	StatusInTransit Status = "in-transit"
	StatusCompleted Status = "completed"
)

// Statuses lists every state, in life order.
var Statuses = []string{string(StatusUpcoming), string(StatusInTransit), string(StatusCompleted)}

// Field limits: generous for real data, small enough to keep rows and indexes lean.
const (
	maxIDLen         = 100
	maxNameLen       = 200
	maxReferenceLen  = 100
	maxTicketLen     = 100
	maxRegLen        = 20
	maxPostcodeLen   = 16
	maxTags          = 20
	maxTagLen        = 50
	maxFiles         = 20
	maxWeight        = 1e9
	tagSeparator     = ";"
	searchSeparator  = "|"
	minSearchRunes   = 1
	maxSearchRunes   = 100
	deliveryDateName = "deliveryDateISO"
)

// Party is an organisation or a user referenced by id with its display name.
type Party struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Commodity is the reference-data commodity of a load with its default weight unit.
type Commodity struct {
	ID         int
	Name       string
	Unit       string
	Conversion float64
}

// Load is one haulage job.
type Load struct {
	ID                  string
	Reference           string
	Organiser           Party
	Carrier             *Party
	Driver              *Party
	Commodity           Commodity
	DeliveryDate        time.Time
	DeliveryDateISO     string
	PickupPostcode      string
	DropoffPostcode     string
	Weight              *float64
	WeightNet           *float64
	VehicleRegistration string
	TicketNumber        string
	Status              Status
	Files               []filestore.Ref
	Tags                []string
	// CreatorID is the organisation that created the load and whose reference
	// space holds its reference: the carrier for the carrier form, else the
	// organiser. It is not part of the API's load shape.
	CreatorID   string
	CreatedBy   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	CompletedAt *time.Time
}

// Weight is the weight object of the API: an amount in a named unit.
type Weight struct {
	Name       string  `json:"name"`
	Conversion float64 `json:"conversion"`
	Weight     float64 `json:"weight"`
}

type idName struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

type loadJSON struct {
	ID                  string          `json:"id"`
	Reference           string          `json:"reference"`
	Organiser           Party           `json:"organiser"`
	Carrier             *Party          `json:"carrier"`
	Driver              *Party          `json:"driver"`
	Commodity           idName          `json:"commodity"`
	DeliveryDateISO     string          `json:"deliveryDateISO"`
	DropoffPostcode     string          `json:"dropoffPostcode"`
	PickupPostcode      string          `json:"pickupPostcode"`
	Weight              *Weight         `json:"weight"`
	WeightNet           *Weight         `json:"weightNet"`
	VehicleRegistration string          `json:"vehicleRegistration"`
	TicketNumber        string          `json:"ticketNumber"`
	Status              Status          `json:"status"`
	Files               []filestore.Ref `json:"files"`
	Tags                []string        `json:"tags"`
	UpdatedAtUTC        string          `json:"updatedAtUTC"`
}

// MarshalJSON renders the seed's load shape: weights as weight objects of the
// commodity's unit, empty lists as [] rather than null.
func (l *Load) MarshalJSON() ([]byte, error) {
	files, tags := l.Files, l.Tags
	if files == nil {
		files = []filestore.Ref{}
	}
	if tags == nil {
		tags = []string{}
	}
	return json.Marshal(loadJSON{
		ID: l.ID, Reference: l.Reference, Organiser: l.Organiser, Carrier: l.Carrier, Driver: l.Driver,
		Commodity:       idName{ID: l.Commodity.ID, Name: l.Commodity.Name},
		DeliveryDateISO: l.DeliveryDateISO, DropoffPostcode: l.DropoffPostcode, PickupPostcode: l.PickupPostcode,
		Weight: l.weightObject(l.Weight), WeightNet: l.weightObject(l.WeightNet),
		VehicleRegistration: l.VehicleRegistration, TicketNumber: l.TicketNumber, Status: l.Status,
		Files: files, Tags: tags, UpdatedAtUTC: l.UpdatedAt.UTC().Format(time.RFC3339),
	})
}

func (l *Load) weightObject(v *float64) *Weight {
	if v == nil {
		return nil
	}
	return &Weight{Name: l.Commodity.Unit, Conversion: l.Commodity.Conversion, Weight: *v}
}

// VisibleTo tells whether the principal may see the load: a member of its
// organiser or carrier organisation, or its driver.
func (l *Load) VisibleTo(p *auth.Principal) bool {
	return l.isOrganiser(p) || l.isCarrier(p) || l.isDriver(p)
}

func (l *Load) isOrganiser(p *auth.Principal) bool { return p.MemberOf(l.Organiser.ID) }

func (l *Load) isCarrier(p *auth.Principal) bool { return l.Carrier != nil && p.MemberOf(l.Carrier.ID) }

func (l *Load) isDriver(p *auth.Principal) bool {
	return p != nil && l.Driver != nil && p.UserID != "" && l.Driver.ID == p.UserID
}

// SendToDriver assigns the driver and puts the load in transit. The organiser
// or the carrier may do it; a completed load cannot move any more.
func (l *Load) SendToDriver(p *auth.Principal, driver Party, now time.Time) error {
	if !l.isOrganiser(p) && !l.isCarrier(p) {
		return apierr.Forbidden("only the organiser or the carrier of load %s may send it to a driver", l.ID)
	}
	if l.Status == StatusCompleted {
		return apierr.Conflict("load %s is completed and can no longer be sent to a driver", l.ID)
	}
	if l.Driver != nil && l.Driver.ID == driver.ID && driver.Name == "" {
		driver.Name = l.Driver.Name // re-sending keeps the name already known
	}
	l.Driver = &driver
	l.Status = StatusInTransit
	l.UpdatedAt = now
	l.learnNames(p)
	return nil
}

// learnNames fills the carrier's and the driver's names from the token of
// the one acting, when nobody gave them: send-to-carrier and send-to-driver
// take the names as optional, so the first the load hears of them is often
// the carrier's own hand-off or the driver's own proof of delivery. A name
// already known is kept (the organiser may have spelt it as it prefers).
func (l *Load) learnNames(p *auth.Principal) {
	if p == nil {
		return
	}
	if l.Carrier != nil && l.Carrier.Name == "" && p.OrgID == l.Carrier.ID && p.OrgName != "" {
		l.Carrier.Name = p.OrgName
	}
	if l.Driver != nil && l.Driver.Name == "" && p.UserID == l.Driver.ID && p.Name != "" {
		l.Driver.Name = p.Name
	}
}

// SendToCarrier sets the carrier. Only the organiser may do it, and not once
// the load is completed. The status does not change: the carrier still has to
// send it to a driver.
func (l *Load) SendToCarrier(p *auth.Principal, carrier Party, now time.Time) error {
	if !l.isOrganiser(p) {
		return apierr.Forbidden("only the organiser of load %s may send it to a carrier", l.ID)
	}
	if l.Status == StatusCompleted {
		return apierr.Conflict("load %s is completed and can no longer be sent to a carrier", l.ID)
	}
	if l.Carrier != nil && l.Carrier.ID == carrier.ID && carrier.Name == "" {
		carrier.Name = l.Carrier.Name // re-sending keeps the name already known
	}
	l.Carrier = &carrier
	l.UpdatedAt = now
	return nil
}

// Proof is a checked proof of delivery.
type Proof struct {
	WeightNet           float64
	TicketNumber        string
	VehicleRegistration string
	Files               []filestore.Ref
}

// Complete records a proof of delivery. The driver, the carrier or the
// organiser may do it, from upcoming or in-transit; a second one conflicts.
// The proof's files join the load's files.
func (l *Load) Complete(p *auth.Principal, proof Proof, now time.Time) error {
	if !l.VisibleTo(p) {
		return apierr.NotFound("load")
	}
	if l.Status == StatusCompleted {
		return apierr.Conflict("load %s already has a proof of delivery", l.ID)
	}
	w := proof.WeightNet
	l.WeightNet = &w
	l.TicketNumber = proof.TicketNumber
	l.VehicleRegistration = proof.VehicleRegistration
	for _, f := range proof.Files {
		if !slices.ContainsFunc(l.Files, func(have filestore.Ref) bool { return have.ID == f.ID }) {
			l.Files = append(l.Files, f)
		}
	}
	l.Status = StatusCompleted
	l.UpdatedAt = now
	l.CompletedAt = &now
	l.learnNames(p)
	return nil
}

// SearchText is the normalised text that `query` matches: reference, ticket
// number, vehicle registration, postcodes and party names, each normalised
// like a query and kept apart by a separator no query can contain.
func (l *Load) SearchText() string {
	parts := []string{l.Reference, l.TicketNumber, l.VehicleRegistration, l.PickupPostcode, l.DropoffPostcode, l.Organiser.Name}
	if l.Carrier != nil {
		parts = append(parts, l.Carrier.Name)
	}
	if l.Driver != nil {
		parts = append(parts, l.Driver.Name)
	}
	var b strings.Builder
	for _, p := range parts {
		if n := NormaliseText(p); n != "" {
			b.WriteString(searchSeparator)
			b.WriteString(n)
		}
	}
	if b.Len() > 0 {
		b.WriteString(searchSeparator)
	}
	return b.String()
}

// NormaliseText keeps only letters and digits, lower-cased, so that
// "AB12 3CD", "ab123cd" and "AB-12-3CD" all match one another.
func NormaliseText(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// OrganiserForm is the organiser form of "create a new load".
type OrganiserForm struct {
	OrganiserID         string                          `json:"organiserId"`
	OrganiserName       string                          `json:"organiserName"`
	CommodityID         httpx.Nullable[float64]         `json:"commodityId"`
	Reference           string                          `json:"reference"`
	DeliveryDateISO     string                          `json:"deliveryDateISO"`
	Weight              httpx.Nullable[float64]         `json:"weight"`
	WeightNet           httpx.Nullable[float64]         `json:"weightNet"`
	TicketNumber        string                          `json:"ticketNumber"`
	VehicleRegistration string                          `json:"vehicleRegistration"`
	Files               httpx.Nullable[[]filestore.Ref] `json:"files"`
	Tags                httpx.Nullable[[]string]        `json:"tags"`
	PickupPostcode      *string                         `json:"pickupPostcode"`
	DropoffPostcode     *string                         `json:"dropoffPostcode"`
}

// Draft checks the form's presence rules and returns it as a draft.
func (o OrganiserForm) Draft(f *apierr.Fields) Draft {
	requireSet(f, "weight", o.Weight.Set)
	requireSet(f, "weightNet", o.WeightNet.Set)
	requireSet(f, "files", o.Files.Set)
	requireSet(f, "tags", o.Tags.Set && o.Tags.Value != nil)
	d := Draft{
		OrganiserID: o.OrganiserID, OrganiserName: o.OrganiserName, Reference: o.Reference,
		DeliveryDateISO: o.DeliveryDateISO, Weight: o.Weight.Value, WeightNet: o.WeightNet.Value,
		TicketNumber: o.TicketNumber, VehicleRegistration: o.VehicleRegistration,
		PickupPostcode: deref(o.PickupPostcode), DropoffPostcode: deref(o.DropoffPostcode),
	}
	d.CommodityID = commodityID(f, o.CommodityID)
	if o.Files.Value != nil {
		d.Files = *o.Files.Value
	}
	if o.Tags.Value != nil {
		d.Tags = *o.Tags.Value
	}
	return d
}

// Validate completes the binder's answer when a member has the wrong type:
// the form's other failures are named with it. (Otherwise the service runs
// these checks, with those that need the database.)
func (o *OrganiserForm) Validate(f *apierr.Fields) {
	d := o.Draft(f)
	d.Validate(f)
}

// CarrierForm is the carrier form of "create a new load": a carrier records a
// load it transports; the organiser defaults to the carrier itself.
type CarrierForm struct {
	OrganisationID   string                   `json:"organisationId"`
	OrganisationName string                   `json:"organisationName"`
	CarrierID        string                   `json:"carrierId"`
	CarrierName      string                   `json:"carrierName"`
	CommodityID      httpx.Nullable[float64]  `json:"commodityId"`
	Reference        string                   `json:"reference"`
	DeliveryDateISO  string                   `json:"deliveryDateISO"`
	Weight           httpx.Nullable[float64]  `json:"weight"`
	Tags             httpx.Nullable[[]string] `json:"tags"`
	PickupPostcode   *string                  `json:"pickupPostcode"`
	DropoffPostcode  *string                  `json:"dropoffPostcode"`
}

// Draft checks the form's presence rules and returns it as a draft.
func (c CarrierForm) Draft(f *apierr.Fields) Draft {
	requireSet(f, "weight", c.Weight.Set)
	requireSet(f, "tags", c.Tags.Set && c.Tags.Value != nil)
	d := Draft{
		OrganiserID: strings.TrimSpace(c.OrganisationID), OrganiserName: strings.TrimSpace(c.OrganisationName),
		CarrierID: c.CarrierID, CarrierName: c.CarrierName, Reference: c.Reference,
		DeliveryDateISO: c.DeliveryDateISO, Weight: c.Weight.Value,
		PickupPostcode: deref(c.PickupPostcode), DropoffPostcode: deref(c.DropoffPostcode),
		organiserPaths: [2]string{"organisationId", "organisationName"}, byCarrier: true,
	}
	if d.OrganiserID == "" {
		// The carrier organises its own load unless it names someone else;
		// then the carrier's members are checked as the organiser's.
		d.OrganiserID, d.OrganiserName = strings.TrimSpace(c.CarrierID), strings.TrimSpace(c.CarrierName)
		d.organiserPaths = [2]string{"carrierId", "carrierName"}
	} else {
		f.Required("carrierId", c.CarrierID)
		f.Required("carrierName", c.CarrierName)
	}
	d.CommodityID = commodityID(f, c.CommodityID)
	if c.Tags.Value != nil {
		d.Tags = *c.Tags.Value
	}
	return d
}

// Validate completes the binder's answer (see OrganiserForm.Validate).
func (c *CarrierForm) Validate(f *apierr.Fields) {
	d := c.Draft(f)
	d.Validate(f)
}

func requireSet(f *apierr.Fields, path string, set bool) {
	f.Check(set, path, "required", "is required")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// commodityID checks that the commodity id is present and an integer.
func commodityID(f *apierr.Fields, v httpx.Nullable[float64]) int {
	if v.Value == nil {
		f.Add("commodityId", "required", "is required", nil)
		return 0
	}
	n := *v.Value
	if n != math.Trunc(n) || n < 1 || n > math.MaxInt32 {
		f.Add("commodityId", "format", "must be a positive integer commodity id", map[string]any{"actual": n})
		return 0
	}
	return int(n)
}

// Draft is a load as a client describes it (organiser form, carrier form or an
// import row), before it is checked.
type Draft struct {
	OrganiserID         string
	OrganiserName       string
	CarrierID           string
	CarrierName         string
	CommodityID         int
	Reference           string
	DeliveryDateISO     string
	Weight              *float64
	WeightNet           *float64
	TicketNumber        string
	VehicleRegistration string
	PickupPostcode      string
	DropoffPostcode     string
	Files               []filestore.Ref
	Tags                []string
	// Problems are failures found while reading the draft (an import cell that
	// does not parse); Validate reports them with the rest.
	Problems []apierr.FieldError

	// organiserPaths names the members that carried the organiser (they differ per form).
	organiserPaths [2]string
	// byCarrier marks a carrier-form draft: the carrier creates the load.
	byCarrier    bool
	deliveryDate time.Time
}

// Creator is the organisation that creates the load: the carrier of a
// carrier-form draft, else the organiser (organiser form, batch rows). The
// caller must be a member of it, and the load's reference belongs to its
// reference space (API.md, "Loads").
func (d *Draft) Creator() string {
	if d.byCarrier {
		return d.CarrierID
	}
	return d.OrganiserID
}

// Key is a draft's business key: (creator, organiser, reference).
func (d *Draft) Key() Key {
	return Key{CreatorID: d.Creator(), OrganiserID: d.OrganiserID, Reference: d.Reference}
}

// Key is the unique business key of a load: an organiser's reference within
// the reference space of the organisation that created the load. A carrier's
// load naming organisation A (creator the carrier) and A's own load (creator
// A) may share A's reference without touching each other.
type Key struct {
	CreatorID   string
	OrganiserID string
	Reference   string
}

// Key returns the load's business key.
func (l *Load) Key() Key {
	return Key{CreatorID: l.CreatorID, OrganiserID: l.Organiser.ID, Reference: l.Reference}
}

// Validate trims the draft and records every failing field. commodityId
// presence is checked by the forms; here 0 means it already failed.
func (d *Draft) Validate(f *apierr.Fields) {
	orgID, orgName := "organiserId", "organiserName"
	if d.organiserPaths[0] != "" {
		orgID, orgName = d.organiserPaths[0], d.organiserPaths[1]
	}
	f.Merge(d.Problems)
	trim(&d.OrganiserID, &d.OrganiserName, &d.CarrierID, &d.CarrierName, &d.Reference, &d.DeliveryDateISO,
		&d.TicketNumber, &d.VehicleRegistration, &d.PickupPostcode, &d.DropoffPostcode)
	// JSON bodies were checked by the binder; import cells arrive here unchecked.
	for _, t := range []struct{ path, value string }{{orgID, d.OrganiserID}, {orgName, d.OrganiserName},
		{"carrierId", d.CarrierID}, {"carrierName", d.CarrierName}, {"reference", d.Reference},
		{deliveryDateName, d.DeliveryDateISO}, {"ticketNumber", d.TicketNumber}, {"vehicleRegistration", d.VehicleRegistration},
		{"pickupPostcode", d.PickupPostcode}, {"dropoffPostcode", d.DropoffPostcode}} {
		httpx.CheckText(f, t.path, t.value)
	}
	for i, tag := range d.Tags {
		httpx.CheckText(f, fmt.Sprintf("tags[%d]", i), tag)
	}
	if f.Required(orgID, d.OrganiserID) {
		f.MaxLen(orgID, d.OrganiserID, maxIDLen)
	}
	if f.Required(orgName, d.OrganiserName) {
		f.MaxLen(orgName, d.OrganiserName, maxNameLen)
	}
	if orgID != "carrierId" { // else the carrier was just checked as the organiser
		f.MaxLen("carrierId", d.CarrierID, maxIDLen)
		f.MaxLen("carrierName", d.CarrierName, maxNameLen)
	}
	if f.Required("reference", d.Reference) {
		f.MaxLen("reference", d.Reference, maxReferenceLen)
	}
	if f.Required(deliveryDateName, d.DeliveryDateISO) {
		if t, dateOnly, ok := httpx.CheckDate(f, deliveryDateName, d.DeliveryDateISO); ok {
			d.deliveryDate = t
			// Store a canonical form: the date as given, or the instant in UTC.
			if dateOnly {
				d.DeliveryDateISO = t.Format(time.DateOnly)
			} else {
				d.DeliveryDateISO = t.Format(time.RFC3339Nano)
			}
		}
	}
	checkWeight(f, "weight", d.Weight)
	checkWeight(f, "weightNet", d.WeightNet)
	f.MaxLen("ticketNumber", d.TicketNumber, maxTicketLen)
	f.MaxLen("vehicleRegistration", d.VehicleRegistration, maxRegLen)
	f.MaxLen("pickupPostcode", d.PickupPostcode, maxPostcodeLen)
	f.MaxLen("dropoffPostcode", d.DropoffPostcode, maxPostcodeLen)
	d.Tags = checkTags(f, d.Tags)
	if len(d.Files) > maxFiles {
		f.Add("files", "max_items", fmt.Sprintf("must hold at most %d files", maxFiles), map[string]any{"max": maxFiles, "actual": len(d.Files)})
	}
}

func trim(ss ...*string) {
	for _, s := range ss {
		*s = strings.TrimSpace(*s)
	}
}

func checkWeight(f *apierr.Fields, path string, v *float64) {
	if v == nil {
		return
	}
	if *v < 0 || *v > maxWeight || math.IsNaN(*v) {
		f.Add(path, "range", fmt.Sprintf("must be between 0 and %g", float64(maxWeight)), map[string]any{"min": 0, "max": maxWeight, "actual": *v})
	}
}

// checkTags trims the tags, drops repeats and checks each one. A tag may not
// hold ";", which separates tags in CSV files.
func checkTags(f *apierr.Fields, tags []string) []string {
	if len(tags) > maxTags {
		f.Add("tags", "max_items", fmt.Sprintf("must hold at most %d tags", maxTags), map[string]any{"max": maxTags, "actual": len(tags)})
		return tags
	}
	out := make([]string, 0, len(tags))
	for i, t := range tags {
		t = strings.TrimSpace(t)
		path := "tags[" + strconv.Itoa(i) + "]"
		switch {
		case t == "":
			f.Add(path, "required", "must not be blank", nil)
		case strings.Contains(t, tagSeparator):
			f.Add(path, "format", "must not contain ';'", nil)
		case !f.MaxLen(path, t, maxTagLen):
		case !slices.Contains(out, t):
			out = append(out, t)
		}
	}
	return out
}

// NewLoad builds a new, upcoming load from a validated draft.
func NewLoad(id string, d *Draft, c Commodity, files []filestore.Ref, createdBy string, now time.Time) *Load {
	l := &Load{
		ID: id, Reference: d.Reference, Organiser: Party{ID: d.OrganiserID, Name: d.OrganiserName},
		Status: StatusUpcoming, CreatorID: d.Creator(), CreatedBy: createdBy, CreatedAt: now, UpdatedAt: now, Files: files,
	}
	if d.CarrierID != "" {
		l.Carrier = &Party{ID: d.CarrierID, Name: d.CarrierName}
	}
	l.apply(d, c)
	return l
}

// apply copies what a draft (and an import row) may set on a load.
func (l *Load) apply(d *Draft, c Commodity) {
	l.Organiser.Name = d.OrganiserName
	l.Commodity = c
	l.DeliveryDate, l.DeliveryDateISO = d.deliveryDate, d.DeliveryDateISO
	l.PickupPostcode, l.DropoffPostcode = d.PickupPostcode, d.DropoffPostcode
	l.Weight, l.WeightNet = d.Weight, d.WeightNet
	l.TicketNumber, l.VehicleRegistration = d.TicketNumber, d.VehicleRegistration
	l.Tags = d.Tags
}

// Reapply updates an existing load from an import row. changed tells whether
// anything differs; a completed load may not change any more.
func (l *Load) Reapply(d *Draft, c Commodity, now time.Time) (changed bool, err error) {
	next := *l
	next.apply(d, c)
	if sameData(l, &next) {
		return false, nil
	}
	if l.Status == StatusCompleted {
		return false, apierr.Conflict("load %s is completed and can no longer change", d.Reference)
	}
	next.UpdatedAt = now
	*l = next
	return true, nil
}

func sameData(a, b *Load) bool {
	return a.Organiser == b.Organiser && a.Commodity == b.Commodity &&
		a.DeliveryDate.Equal(b.DeliveryDate) && a.DeliveryDateISO == b.DeliveryDateISO &&
		a.PickupPostcode == b.PickupPostcode && a.DropoffPostcode == b.DropoffPostcode &&
		sameFloat(a.Weight, b.Weight) && sameFloat(a.WeightNet, b.WeightNet) &&
		a.TicketNumber == b.TicketNumber && a.VehicleRegistration == b.VehicleRegistration &&
		slices.Equal(a.Tags, b.Tags)
}

func sameFloat(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// DriverAssignment is one item of "send to driver". driverName is an optional
// addition to the seed: tokens carry no directory of drivers.
type DriverAssignment struct {
	LoadID     string `json:"loadId"`
	DriverID   string `json:"driverId"`
	DriverName string `json:"driverName"`
}

// Validate records the item's failing fields.
func (a *DriverAssignment) Validate(f *apierr.Fields) {
	trim(&a.LoadID, &a.DriverID, &a.DriverName)
	f.Required("loadId", a.LoadID)
	if f.Required("driverId", a.DriverID) {
		f.MaxLen("driverId", a.DriverID, maxIDLen)
	}
	f.MaxLen("driverName", a.DriverName, maxNameLen)
}

// CarrierAssignment is one item of "send to carrier". carrierName is an
// optional addition to the seed.
type CarrierAssignment struct {
	LoadID      string `json:"loadId"`
	CarrierID   string `json:"carrierId"`
	CarrierName string `json:"carrierName"`
}

// Validate records the item's failing fields.
func (a *CarrierAssignment) Validate(f *apierr.Fields) {
	trim(&a.LoadID, &a.CarrierID, &a.CarrierName)
	f.Required("loadId", a.LoadID)
	if f.Required("carrierId", a.CarrierID) {
		f.MaxLen("carrierId", a.CarrierID, maxIDLen)
	}
	f.MaxLen("carrierName", a.CarrierName, maxNameLen)
}

// ProofForm is a proof of delivery as sent (the list form names the load).
type ProofForm struct {
	LoadID              string                          `json:"loadId"`
	WeightNet           httpx.Nullable[float64]         `json:"weightNet"`
	TicketNumber        string                          `json:"ticketNumber"`
	VehicleRegistration string                          `json:"vehicleRegistration"`
	Files               httpx.Nullable[[]filestore.Ref] `json:"files"`
}

// Validate records every failing field and returns the proof.
func (p *ProofForm) Validate(f *apierr.Fields) Proof {
	trim(&p.LoadID, &p.TicketNumber, &p.VehicleRegistration)
	f.Required("loadId", p.LoadID)
	var out Proof
	if p.WeightNet.Value == nil {
		f.Add("weightNet", "required", "is required", nil)
	} else {
		out.WeightNet = *p.WeightNet.Value
		checkWeight(f, "weightNet", p.WeightNet.Value)
	}
	if f.Required("ticketNumber", p.TicketNumber) {
		f.MaxLen("ticketNumber", p.TicketNumber, maxTicketLen)
	}
	if f.Required("vehicleRegistration", p.VehicleRegistration) {
		f.MaxLen("vehicleRegistration", p.VehicleRegistration, maxRegLen)
	}
	requireSet(f, "files", p.Files.Set)
	if p.Files.Value != nil {
		out.Files = *p.Files.Value
		if len(out.Files) > maxFiles {
			f.Add("files", "max_items", fmt.Sprintf("must hold at most %d files", maxFiles), map[string]any{"max": maxFiles, "actual": len(out.Files)})
		}
	}
	out.TicketNumber, out.VehicleRegistration = p.TicketNumber, p.VehicleRegistration
	return out
}

// Viewer is who is asking: the loads it sees are those of its organisations
// (as organiser or carrier) and those it drives.
type Viewer struct {
	Orgs   []string
	UserID string
}

// ViewerOf returns the viewer of a principal.
func ViewerOf(p *auth.Principal) Viewer {
	if p == nil {
		return Viewer{}
	}
	return Viewer{Orgs: p.Organisations(), UserID: p.UserID}
}

// Sort fields of the search (API name → meaning).
const (
	SortDeliveryDate = "deliveryDateISO"
	SortReference    = "reference"
	SortStatus       = "status"
	SortTicketNumber = "ticketNumber"
	// SortUpdated orders by the time of the last change (the default of a
	// catch-up with updatedSinceUTC).
	SortUpdated = "updatedAtUTC"
)

// SortFields are the allowed sortBy values.
var SortFields = []string{SortDeliveryDate, SortReference, SortStatus, SortTicketNumber, SortUpdated}

// Filter narrows a search among the loads a viewer sees.
type Filter struct {
	From, To    *time.Time // delivery date bounds, inclusive
	OrganiserID string
	CarrierID   string
	Status      Status
	// Text is a normalised query (NormaliseText): it matches the search text.
	Text string
	// UpdatedSince keeps the loads changed after it (catch-up).
	UpdatedSince *time.Time
	SortBy       string
	SortDesc     bool
	Limit        int
	Offset       int
}

// NewFilter checks a search's text and date range and returns the filter.
func NewFilter(f *apierr.Fields, query string, from, to *time.Time) Filter {
	out := Filter{From: from, To: to}
	if query != "" {
		n := []rune(NormaliseText(query))
		switch {
		case len(n) < minSearchRunes:
			f.Add("query", "format", "must contain a letter or a digit", nil)
		case len(n) > maxSearchRunes:
			f.Add("query", "max_length", fmt.Sprintf("must be at most %d letters and digits", maxSearchRunes), map[string]any{"max": maxSearchRunes})
		default:
			out.Text = string(n)
		}
	}
	if from != nil && to != nil && to.Before(*from) {
		f.Add("endDateISO", "range", "must not be before startDateISO", nil)
	}
	return out
}
