// Package refdata is the System module's reference data: countries, UK and
// Irish regions, commodities with their types, grades, varieties and default
// specifications, trading reasons and unit conversions. It seeds them from the
// data committed under data/, serves them as the settings document and as
// separate lists (cached, with ETags), and imports variety lists from
// spreadsheets.
package refdata

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agritrade/api/platform/httpx"
)

// WeightUnit is the weight object without a value: a unit and its factor to kilograms.
type WeightUnit struct {
	Name       string  `json:"name"`
	Conversion float64 `json:"conversion"`
}

// IDName is a reference-data item: an integer id and a name.
type IDName struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

// Grade is a commodity grade with its variety names.
type Grade struct {
	ID        int      `json:"id"`
	Name      string   `json:"name"`
	Varieties []string `json:"varieties"`
}

// CommodityType is a use of a commodity (milling, feed, malting...) with its grades.
type CommodityType struct {
	ID     int     `json:"id"`
	Name   string  `json:"name"`
	Grades []Grade `json:"grades"`
}

// CommodityItem is one commodity (wheat, barley...); its id is the
// commodityId other resources refer to.
type CommodityItem struct {
	ID     int             `json:"id"`
	Name   string          `json:"name"`
	Types  []CommodityType `json:"types"`
	Tags   []IDName        `json:"tags"`
	Weight WeightUnit      `json:"weight"`
}

// Commodity is a country's group of commodity items (the seed's "commodity").
type Commodity struct {
	ID                string          `json:"id"`
	CountryISO        string          `json:"countryISO"`
	Items             []CommodityItem `json:"items"`
	Type              string          `json:"type"`
	DefaultWeight     WeightUnit      `json:"defaultWeight"`
	WeighbridgeWeight WeightUnit      `json:"weighbridgeWeight"`
}

// SellerCommodity is a kind of produce a seller can offer.
type SellerCommodity struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Reason is a settlement deduction, settlement bonus or close-listing reason.
type Reason struct {
	ID          int    `json:"id"`
	Description string `json:"description"`
}

// ExFarmPriceCommodity is a commodity whose ex-farm price is published, with the grades it covers.
type ExFarmPriceCommodity struct {
	ID          int    `json:"id"`
	Name        string `json:"name"`
	CommodityID int    `json:"commodityId"`
	Grades      []int  `json:"grades"`
	Default     bool   `json:"default"`
}

// SeamlessTrading holds the periods of seamless trading, in minutes.
type SeamlessTrading struct {
	OpenPeriodMinutes   int `json:"openPeriodMinutes"`
	ReviewPeriodMinutes int `json:"reviewPeriodMinutes"`
	BidExpiryMinutes    int `json:"bidExpiryMinutes"`
}

// Trading is the trading part of the settings document.
type Trading struct {
	SettlementDeductionReasons []Reason               `json:"settlementDeductionReasons"`
	SettlementBonusReasons     []Reason               `json:"settlementBonusReasons"`
	ExFarmPriceCommodities     []ExFarmPriceCommodity `json:"exFarmPriceCommodities"`
	CloseListingReasons        []Reason               `json:"closeListingReasons"`
	SeamlessTrading            SeamlessTrading        `json:"seamlessTrading"`
}

// Units are a country's customary units.
type Units struct {
	Distance    string `json:"distance"`
	Weight      string `json:"weight"`
	Capacity    string `json:"capacity"`
	Temperature string `json:"temperature"`
}

// Country is a country as the settings document shows it (enabled is a boolean).
type Country struct {
	ISO            string     `json:"iso"`
	Name           string     `json:"name"`
	Enabled        bool       `json:"enabled"`
	Units          Units      `json:"units"`
	ISO3           string     `json:"iso3"`
	Currency       string     `json:"currency"`
	CallingCode    string     `json:"callingCode"`
	ZoneDescriptor string     `json:"zoneDescriptor"`
	Locale         string     `json:"locale"`
	Continent      string     `json:"continent"`
	DefaultWeight  WeightUnit `json:"defaultWeight"`
}

// ListedCountry is a country as the country list shows it: enabled is the
// string "true" or "false" there, and there is no default weight.
type ListedCountry struct {
	ISO            string `json:"iso"`
	Name           string `json:"name"`
	Enabled        string `json:"enabled"`
	Units          Units  `json:"units"`
	ISO3           string `json:"iso3"`
	Currency       string `json:"currency"`
	CallingCode    string `json:"callingCode"`
	ZoneDescriptor string `json:"zoneDescriptor"`
	Locale         string `json:"locale"`
	Continent      string `json:"continent"`
}

// Listed returns the country-list form of the country.
func (c Country) Listed() ListedCountry {
	return ListedCountry{
		ISO: c.ISO, Name: c.Name, Enabled: strconv.FormatBool(c.Enabled), Units: c.Units, ISO3: c.ISO3,
		Currency: c.Currency, CallingCode: c.CallingCode, ZoneDescriptor: c.ZoneDescriptor, Locale: c.Locale,
		Continent: c.Continent,
	}
}

// Region is a county, unitary authority, council area or district with its
// ISO 3166-2 code. TB is the routine bovine TB herd-testing interval in months
// (0 where no interval applies).
type Region struct {
	ISO     string   `json:"iso"`
	Name    string   `json:"name"`
	TB      int      `json:"tb"`
	Country string   `json:"country"`
	Group   string   `json:"group"`
	UKGroup string   `json:"ukGroup"`
	Aliases []string `json:"aliases"`
}

// SettingsRegion is a region as the settings document shows it.
type SettingsRegion struct {
	ISO     string `json:"iso"`
	Name    string `json:"name"`
	Group   string `json:"group"`
	Country string `json:"country"`
}

// RegionGroup names a group and lists its regions' codes, comma separated.
type RegionGroup struct {
	Group   string `json:"group"`
	Regions string `json:"regions"`
}

// RegionList is the answer of the regions operation.
type RegionList struct {
	ID      string   `json:"id"`
	Regions []Region `json:"regions"`
}

// Settings is the settings document.
type Settings struct {
	Commodities       []Commodity        `json:"commodities"`
	SellerCommodities []SellerCommodity  `json:"sellerCommodities"`
	Trading           Trading            `json:"trading"`
	Conversions       map[string]float64 `json:"conversions"`
	Countries         map[string]Country `json:"countries"`
	Regions           []SettingsRegion   `json:"regions"`
	RegionGroups      []RegionGroup      `json:"regionGroups"`
}

// Catalogue is every piece of reference data, in display order.
type Catalogue struct {
	Countries         []Country
	Regions           []Region
	Commodities       []Commodity
	SellerCommodities []SellerCommodity
	Trading           Trading
	Conversions       map[string]float64
}

// SpecUnit is a measured quality with its unit.
type SpecUnit struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	Unit string `json:"unit"`
}

// Measure is the accepted range of one quality. Where a contract sets only one
// side, the other carries the bound of the scale (0, or 100 for percentages).
type Measure struct {
	Specification SpecUnit `json:"specification"`
	Min           float64  `json:"min"`
	Max           float64  `json:"max"`
}

// SpecCommodity names the commodity, type and grade a specification is for.
type SpecCommodity struct {
	ID    int    `json:"id"`
	Name  string `json:"name"`
	Type  IDName `json:"type"`
	Grade IDName `json:"grade"`
}

// Specification is the default quality specification of a commodity grade.
type Specification struct {
	Commodity SpecCommodity `json:"commodity"`
	Measures  []Measure     `json:"measures"`
}

// ItemUnit is what other modules need of a commodity item: its name and weight unit.
type ItemUnit struct {
	Name   string
	Weight WeightUnit
}

// MaxVarietyLen caps a variety name.
const MaxVarietyLen = 100

// VarietyRow is one validated row of a variety import.
type VarietyRow struct {
	Line        int
	CommodityID int
	Type        string
	Grade       string
	Variety     string
}

// NewVarietyRow validates the cells of an import row and returns the row or
// every problem found, as messages for the row's result.
func NewVarietyRow(line int, commodityID, typ, grade, variety string) (VarietyRow, []string) {
	var problems []string
	for _, c := range []struct{ name, value string }{{"commodityId", commodityID}, {"type", typ}, {"grade", grade}, {"variety", variety}} {
		if code, msg := httpx.TextProblem(c.value); code != "" {
			// Cells that cannot be stored go no further: the row is refused whole.
			problems = append(problems, c.name+" "+msg)
		}
	}
	if len(problems) > 0 {
		return VarietyRow{Line: line, Type: strings.ToValidUTF8(typ, "\uFFFD"), Grade: strings.ToValidUTF8(grade, "\uFFFD")}, problems
	}
	r := VarietyRow{Line: line, Type: typ, Grade: grade, Variety: variety}
	switch id, err := strconv.Atoi(commodityID); {
	case commodityID == "":
		problems = append(problems, "commodityId is required")
	case err != nil || id <= 0:
		// Spreadsheets write whole numbers as "1.0" at times; accept those.
		f, ferr := strconv.ParseFloat(commodityID, 64)
		if ferr != nil || f <= 0 || f > math.MaxInt32 || f != math.Trunc(f) {
			problems = append(problems, fmt.Sprintf("commodityId must be a positive integer, not %q", commodityID))
		} else {
			r.CommodityID = int(f)
		}
	default:
		r.CommodityID = id
	}
	if typ == "" {
		problems = append(problems, "type is required")
	}
	if grade == "" {
		problems = append(problems, "grade is required")
	}
	switch {
	case variety == "":
		problems = append(problems, "variety is required")
	case utf8.RuneCountInString(variety) > MaxVarietyLen:
		problems = append(problems, fmt.Sprintf("variety must be at most %d characters", MaxVarietyLen))
	case strings.ContainsAny(variety, "\r\n\t"):
		problems = append(problems, "variety must be on one line")
	}
	return r, problems
}

// Reference is the row's business key, commodityId/type/grade.
func (r VarietyRow) Reference() string {
	return fmt.Sprintf("%d/%s/%s", r.CommodityID, r.Type, r.Grade)
}

// GradeKey finds a grade of a commodity item by its type and grade names.
type GradeKey struct {
	ItemID int
	Type   string // lower case
	Grade  string // lower case
}

// KeyOf returns the lookup key of a row.
func (r VarietyRow) KeyOf() GradeKey {
	return GradeKey{ItemID: r.CommodityID, Type: strings.ToLower(r.Type), Grade: strings.ToLower(r.Grade)}
}

// GradeRef locates an existing grade.
type GradeRef struct {
	ItemName  string
	TypeName  string
	GradeName string
	GradeID   int
	Country   string
}
