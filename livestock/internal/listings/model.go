// Package listings is the marketplace of the Livestock module: listings of
// sheep, cattle, working dogs, feed and bedding, their search (filters,
// distance, facets, CSV), drafts and edits, closing, reports and wishlists.
//
// A listing keeps its full JSON shape (location, price, files, properties) as
// documents, and copies every field the search filters or sorts on into real
// indexed columns (kind, type, status, breed, breed society, sexes, age range,
// coordinates, price) and a child table (additionalInfo), so that no search
// scans JSON.
package listings

import (
	"encoding/json"
	"github.com/agritrade/api/platform/geo"
	"time"

	"github.com/agritrade/api/livestock/internal/categories"
	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/filestore"
)

// The listing types of the seed.
const (
	Selling = "selling"
	Buying  = "buying"
)

// The listing statuses (API.md): created as draft or active; closed as sold or
// cancelled (selling) or found or cancelled (buying).
const (
	StatusDraft     = "draft"
	StatusActive    = "active"
	StatusSold      = "sold"
	StatusFound     = "found"
	StatusCancelled = "cancelled"
)

// Enumerations of the listing envelope and properties. The seed gives sexes and
// additionalInfo (the same values for sheep and cattle); the others are decided
// here and documented in openapi.yaml. breedType and the sheep and cattle type
// values come from the category tree (categories.Values).
var (
	Types        = []string{Selling, Buying}
	CloseReasons = []string{StatusSold, StatusFound, StatusCancelled}
	PriceTypes   = []string{"fixed", "negotiable", "auction"}
	Sexes        = []string{"ewes", "rams", "lambs", "shearlings", "heifers", "steers", "bulls", "cows"}
	AddInfo      = []string{"crossbred", "in-lamb", "pedigree", "organic", "in-calf", "named-sire"}
	// TBStatuses are the bovine TB herd statuses of GB and Irish trading:
	// officially TB free (OTF), OTF suspended, OTF withdrawn, under restriction,
	// not under restriction, or not stated.
	TBStatuses = []string{"officially-tb-free", "otf-suspended", "otf-withdrawn", "restricted", "unrestricted", "unspecified"}
	// TBIntervals are the herd TB testing intervals in use (short-interval tests
	// run every 60 days on restricted herds).
	TBIntervals = []string{"short-interval", "six-monthly", "annual", "two-yearly", "three-yearly", "four-yearly", "unspecified"}
	DogSexes    = []string{"male", "female"}
	// ReportReasons are the seed's reasons for reporting a listing.
	ReportReasons = []string{"misleading", "suspicious", "other"}
)

// WeightUnits maps the weight units accepted in cattle performance to their
// factor to kilograms (the weight object's conversion when the client omits it).
var WeightUnits = map[string]float64{"kg": 1, "g": 0.001, "lb": 0.45359237, "tonne": 1000}

// Limits of listing fields.
const (
	MaxDescription  = 5000
	MaxTags         = 20
	MaxTagLen       = 50
	MaxCategories   = 20
	MaxFiles        = 20
	MaxText         = 200
	MaxNotes        = 2000
	MaxReportText   = 1000
	MaxAgeMonths    = 600
	MaxQuantity     = 100000
	MaxAmount       = 1e9
	reportsToHide   = 3
	timeFormat      = "2006-01-02T15:04:05Z"
	dateFormat      = "2006-01-02"
	earliestDogYear = 1990
)

// Money is an amount in an ISO 4217 currency.
type Money struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// Price is the seed's price object.
type Price struct {
	Type         string `json:"type"`
	PricePerUnit Money  `json:"pricePerUnit"`
	MinPrice     *Money `json:"minPrice"`
	MaxPrice     *Money `json:"maxPrice"`
}

// The seed's location resource, shared with the other modules through the platform.
// A listing's location is where the animals or goods are.

// Address is the postal address of a location.
type Address = geo.Address

// Coordinates is a WGS 84 point.
type Coordinates = geo.Coordinates

// Location is a three-word address, a postal address and a point.
type Location = geo.Location

// Properties are the kind-specific properties of a listing.
type Properties interface {
	// searchable returns the values the search filters on.
	searchable() searchFields
}

// searchFields are the property values copied into indexed columns.
type searchFields struct {
	Breed, Society, Sexes string
	Info                  []string
	MinAge, MaxAge        *float64
}

// SheepHealth is the health object of a sheep listing.
type SheepHealth struct {
	Data string `json:"data"`
}

// SheepProperties are the properties of a sheep listing.
type SheepProperties struct {
	BreedType      string       `json:"breedType"`
	BreedSociety   string       `json:"breedSociety,omitempty"`
	Type           []string     `json:"type"`
	AdditionalInfo []string     `json:"additionalInfo"`
	Sexes          string       `json:"sexes"`
	Health         *SheepHealth `json:"health,omitempty"`
}

func (p *SheepProperties) searchable() searchFields {
	return searchFields{Breed: p.BreedType, Society: p.BreedSociety, Sexes: p.Sexes, Info: p.AdditionalInfo}
}

// Weight is the seed's weight object with a value.
type Weight struct {
	Name       string  `json:"name"`
	Conversion float64 `json:"conversion"`
	Weight     float64 `json:"weight"`
}

// CattleHealth is the health object of a cattle listing.
type CattleHealth struct {
	TBStatus   string `json:"tbStatus,omitempty"`
	TBDetails  string `json:"tbDetails,omitempty"`
	TBInterval string `json:"tbInterval,omitempty"`
	Data       string `json:"data,omitempty"`
}

// CattlePerformance is the performance object of a cattle listing.
type CattlePerformance struct {
	AverageWeight       *Weight `json:"averageWeight,omitempty"`
	DailyLiveWeightGain *Weight `json:"dailyLiveWeightGain,omitempty"`
}

// CattleProperties are the properties of a cattle listing.
type CattleProperties struct {
	Type           string             `json:"type,omitempty"`
	BreedType      string             `json:"breedType"`
	BreedSociety   string             `json:"breedSociety,omitempty"`
	AdditionalInfo []string           `json:"additionalInfo"`
	Sexes          string             `json:"sexes"`
	Quantity       *int               `json:"quantity,omitempty"`
	SocietyNumber  string             `json:"societyNumber,omitempty"`
	MinAge         *float64           `json:"minAge,omitempty"`
	MaxAge         *float64           `json:"maxAge,omitempty"`
	Health         *CattleHealth      `json:"health,omitempty"`
	Performance    *CattlePerformance `json:"performance,omitempty"`
}

// searchable gives the age range: one bound alone stands for both (a lot of
// animals of one age).
func (p *CattleProperties) searchable() searchFields {
	s := searchFields{Breed: p.BreedType, Society: p.BreedSociety, Sexes: p.Sexes, Info: p.AdditionalInfo, MinAge: p.MinAge, MaxAge: p.MaxAge}
	if s.MinAge == nil {
		s.MinAge = s.MaxAge
	}
	if s.MaxAge == nil {
		s.MaxAge = s.MinAge
	}
	return s
}

// DogRegistration is the registration object of a working dog listing.
type DogRegistration struct {
	DateOfBirth        string `json:"dateOfBirth,omitempty"`
	IsRegistered       bool   `json:"isRegistered"`
	RegistrationNumber string `json:"registrationNumber,omitempty"`
	Name               string `json:"name,omitempty"`
}

// DogProperties are the properties of a working dog listing.
type DogProperties struct {
	BreedType    string           `json:"breedType"`
	BreedSociety string           `json:"breedSociety,omitempty"`
	Sex          string           `json:"sex"`
	Registration *DogRegistration `json:"registration,omitempty"`
}

func (p *DogProperties) searchable() searchFields {
	return searchFields{Breed: p.BreedType, Society: p.BreedSociety}
}

// decodeProperties reads stored properties JSON of a kind with unmarshal
// (listingRow.listing).
func decodeProperties(kind categories.Kind, raw []byte, unmarshal func([]byte, any) error) (Properties, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var p Properties
	switch kind {
	case categories.Sheep:
		p = &SheepProperties{}
	case categories.Cattle:
		p = &CattleProperties{}
	case categories.WorkingDog:
		p = &DogProperties{}
	default:
		return nil, nil
	}
	if err := unmarshal(raw, p); err != nil {
		return nil, err
	}
	// Lists always render as arrays, also for rows written without them.
	switch v := p.(type) {
	case *SheepProperties:
		v.Type, v.AdditionalInfo = nonNil(v.Type), nonNil(v.AdditionalInfo)
	case *CattleProperties:
		v.AdditionalInfo = nonNil(v.AdditionalInfo)
	}
	return p, nil
}

// Listing is a marketplace listing.
type Listing struct {
	ID               string
	UserID           string
	OrganisationID   string
	OrganisationName string
	Kind             categories.Kind
	Type             string
	Status           string
	CategoryIDs      []int
	Location         *Location
	Price            Price
	Files            []filestore.Ref
	Description      string
	Tags             []string
	Properties       Properties
	CreatedAt        time.Time
	UpdatedAt        time.Time
	// ClosedAt is when the listing left the active status for a closed one.
	ClosedAt *time.Time
	// Hidden is set when enough distinct users reported the listing; search
	// leaves it out until an admin reviews it.
	Hidden bool
	// DistanceKm is set on search results around a point.
	DistanceKm *float64
	// IsWishlisted tells whether the caller has the listing on their wishlist.
	IsWishlisted bool
}

// listingJSON is the API shape of a listing.
type listingJSON struct {
	ID               string          `json:"id"`
	UserID           string          `json:"userId"`
	OrganisationID   string          `json:"organisationId"`
	OrganisationName string          `json:"organisationName"`
	Kind             categories.Kind `json:"kind"`
	Type             string          `json:"type"`
	Status           string          `json:"status"`
	CategoryIDs      []int           `json:"categoryIds"`
	Location         *Location       `json:"location"`
	Price            Price           `json:"price"`
	Files            []filestore.Ref `json:"files"`
	Description      string          `json:"description"`
	Tags             []string        `json:"tags"`
	Properties       Properties      `json:"properties"`
	CreatedAtUTC     string          `json:"createdAtUTC"`
	UpdatedAtUTC     string          `json:"updatedAtUTC"`
	DistanceKm       *float64        `json:"distanceKm,omitempty"`
	IsWishlisted     bool            `json:"isWishlisted"`
}

// MarshalJSON renders the API shape: RFC 3339 UTC times, empty lists as [].
func (l *Listing) MarshalJSON() ([]byte, error) {
	v := listingJSON{
		ID: l.ID, UserID: l.UserID, OrganisationID: l.OrganisationID, OrganisationName: l.OrganisationName,
		Kind: l.Kind, Type: l.Type, Status: l.Status, CategoryIDs: nonNil(l.CategoryIDs), Location: l.Location,
		Price: l.Price, Files: nonNil(l.Files), Description: l.Description, Tags: nonNil(l.Tags),
		Properties: l.Properties, CreatedAtUTC: l.CreatedAt.UTC().Format(timeFormat),
		UpdatedAtUTC: l.UpdatedAt.UTC().Format(timeFormat), DistanceKm: l.DistanceKm, IsWishlisted: l.IsWishlisted,
	}
	return json.Marshal(v)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// VisibleTo tells whether p may see the listing: active listings are visible
// to everyone authenticated, drafts and closed ones only to the owner's
// organisation.
func (l *Listing) VisibleTo(p *auth.Principal) bool {
	return l.Status == StatusActive || p.MemberOf(l.OrganisationID)
}

// CloseAs checks the transition of API.md: an active selling listing becomes
// sold or cancelled, an active buying one found or cancelled.
func (l *Listing) CloseAs(status string) error {
	if l.Status != StatusActive {
		return apierr.Conflict("the listing is %s; only active listings can be closed", l.Status)
	}
	allowed := status == StatusCancelled ||
		(l.Type == Selling && status == StatusSold) ||
		(l.Type == Buying && status == StatusFound)
	if !allowed {
		return apierr.Conflict("a %s listing cannot be closed as %s", l.Type, status)
	}
	return nil
}

// Report is a user's report of a listing, kept for moderation.
type Report struct {
	ID             string     `json:"id"`
	ListingID      string     `json:"listingId"`
	UserID         string     `json:"userId"`
	UserName       string     `json:"userName"`
	OrganisationID string     `json:"organisationId"`
	Reason         string     `json:"reason"`
	Message        *string    `json:"message"`
	CreatedAt      time.Time  `json:"-"`
	ReviewedAt     *time.Time `json:"-"`
	ReviewedBy     string     `json:"reviewedBy,omitempty"`
	Decision       string     `json:"decision,omitempty"`
}

// MarshalJSON renders the report with RFC 3339 UTC times.
func (r *Report) MarshalJSON() ([]byte, error) {
	type plain Report
	var reviewed *string
	if r.ReviewedAt != nil {
		s := r.ReviewedAt.UTC().Format(timeFormat)
		reviewed = &s
	}
	return json.Marshal(struct {
		*plain
		CreatedAtUTC  string  `json:"createdAtUTC"`
		ReviewedAtUTC *string `json:"reviewedAtUTC"`
	}{(*plain)(r), r.CreatedAt.UTC().Format(timeFormat), reviewed})
}

// Review decisions of an admin on a reported listing.
const (
	// DecisionClear keeps the listing: it shows in search again.
	DecisionClear = "clear"
	// DecisionRemove takes the listing down: an active one is cancelled, and it
	// stays out of search.
	DecisionRemove = "remove"
)

// Decisions lists the review decisions.
var Decisions = []string{DecisionClear, DecisionRemove}
