// Package imports is the Logistics module's batch upload: a CSV or XLSX file
// with one load per row (the organiser form's fields as columns), upserted by
// (organiser, reference) so that the same file twice creates nothing twice.
package imports

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/agritrade/api/logistics/internal/loads"
	"github.com/agritrade/api/platform/apierr"
)

// The columns of the template, in its order. Published in README.md.
const (
	ColOrganiserID         = "organiserId"
	ColOrganiserName       = "organiserName"
	ColCommodityID         = "commodityId"
	ColReference           = "reference"
	ColDeliveryDateISO     = "deliveryDateISO"
	ColWeight              = "weight"
	ColWeightNet           = "weightNet"
	ColTicketNumber        = "ticketNumber"
	ColVehicleRegistration = "vehicleRegistration"
	ColPickupPostcode      = "pickupPostcode"
	ColDropoffPostcode     = "dropoffPostcode"
	ColTags                = "tags"
)

// Template is the header row of the batch upload template.
var Template = []string{
	ColOrganiserID, ColOrganiserName, ColCommodityID, ColReference, ColDeliveryDateISO, ColWeight, ColWeightNet,
	ColTicketNumber, ColVehicleRegistration, ColPickupPostcode, ColDropoffPostcode, ColTags,
}

// requiredColumns must be in every file; the others may be left out.
var requiredColumns = []string{ColCommodityID, ColReference, ColDeliveryDateISO}

// Defaults fill empty organiser cells: the form's organisation, else the
// caller's current one.
type Defaults struct {
	OrganiserID   string
	OrganiserName string
}

// Mapping knows where each template column is in a file's header. Column names
// match without regard to case or surrounding blanks.
type Mapping struct {
	index map[string]int
}

// NewMapping reads a header row. A missing required column, an unknown column
// or a column named twice fails validation (path "file").
func NewMapping(header []string) (*Mapping, error) {
	m := &Mapping{index: map[string]int{}}
	canonical := map[string]string{}
	for _, c := range Template {
		canonical[strings.ToLower(c)] = c
	}
	var f apierr.Fields
	for i, h := range header {
		name := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if name == "" {
			continue // spreadsheets often carry blank trailing header cells
		}
		c, ok := canonical[name]
		switch {
		case !ok:
			f.Add("file", "unknown_column", fmt.Sprintf("has an unknown column %q (the columns are %s)", strings.TrimSpace(h), strings.Join(Template, ", ")), map[string]any{"column": h})
		case hasKey(m.index, c):
			f.Add("file", "duplicate_column", fmt.Sprintf("has the column %s twice", c), map[string]any{"column": c})
		default:
			m.index[c] = i
		}
	}
	for _, c := range requiredColumns {
		if !hasKey(m.index, c) {
			f.Add("file", "missing_column", "has no column "+c, map[string]any{"column": c})
		}
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

func hasKey(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}

func (m *Mapping) cell(row []string, col string) string {
	i, ok := m.index[col]
	if !ok || i >= len(row) {
		return ""
	}
	return strings.TrimSpace(row[i])
}

// Draft maps a row to a load draft. Cells that do not parse become the
// draft's problems, which the loads service reports with its own checks.
// Empty organiser cells take the defaults.
func (m *Mapping) Draft(row []string, def Defaults) loads.Draft {
	var f apierr.Fields
	d := m.draft(row, def, &f)
	d.Problems = f.List()
	return d
}

func (m *Mapping) draft(row []string, def Defaults, f *apierr.Fields) loads.Draft {
	d := loads.Draft{
		OrganiserID: m.cell(row, ColOrganiserID), OrganiserName: m.cell(row, ColOrganiserName),
		Reference: m.cell(row, ColReference), DeliveryDateISO: m.cell(row, ColDeliveryDateISO),
		TicketNumber: m.cell(row, ColTicketNumber), VehicleRegistration: m.cell(row, ColVehicleRegistration),
		PickupPostcode: m.cell(row, ColPickupPostcode), DropoffPostcode: m.cell(row, ColDropoffPostcode),
		Tags: SplitTags(m.cell(row, ColTags)),
	}
	if d.OrganiserID == "" {
		d.OrganiserID = def.OrganiserID
		if d.OrganiserName == "" {
			d.OrganiserName = def.OrganiserName
		}
	}
	if s := m.cell(row, ColCommodityID); s == "" {
		f.Add(ColCommodityID, "required", "is required", nil)
	} else if n, err := strconv.ParseFloat(s, 64); err != nil || n != math.Trunc(n) || n < 1 || n > math.MaxInt32 {
		f.Add(ColCommodityID, "format", "must be a positive integer commodity id", map[string]any{"actual": s})
	} else {
		d.CommodityID = int(n) // spreadsheets write whole numbers as "12.0" too
	}
	d.Weight = number(f, ColWeight, m.cell(row, ColWeight))
	d.WeightNet = number(f, ColWeightNet, m.cell(row, ColWeightNet))
	return d
}

// number parses an optional number cell; empty is null.
func number(f *apierr.Fields, col, s string) *float64 {
	if s == "" {
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		f.Add(col, "format", "must be a number", map[string]any{"actual": s})
		return nil
	}
	return &v
}

// SplitTags splits a ";"-separated tags cell, dropping blanks.
func SplitTags(s string) []string {
	out := []string{}
	for _, t := range strings.Split(s, ";") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// Messages turns an error into the messages of a row result: one per failing
// field ("weight: must be a number"), or the error's message.
func Messages(err error) []string {
	e, ok := apierr.As(err)
	if !ok {
		return []string{"the row could not be saved"}
	}
	if len(e.Validation) == 0 {
		return []string{e.Message}
	}
	out := make([]string, len(e.Validation))
	for i, v := range e.Validation {
		out[i] = v.Path + ": " + v.Message
	}
	return out
}
