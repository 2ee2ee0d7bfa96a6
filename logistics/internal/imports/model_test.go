package imports

import (
	"strings"
	"testing"

	"github.com/agritrade/api/platform/apierr"
)

func TestSplitTags(t *testing.T) {
	got := SplitTags(" a ; ;b;; c ")
	if strings.Join(got, "|") != "a|b|c" {
		t.Fatalf("%q", got)
	}
	if got := SplitTags(""); got == nil || len(got) != 0 {
		t.Fatalf("empty cell: %#v", got)
	}
}

func TestMappingDraft(t *testing.T) {
	m, err := NewMapping([]string{"\ufeffReference", " commodityId ", "DELIVERYDATEISO", "weight", "tags", ""})
	if err != nil {
		t.Fatal(err)
	}
	d := m.Draft([]string{" R-1 ", "12.0", "2026-01-01", "3.25", "x;y"}, Defaults{OrganiserID: "o", OrganiserName: "O"})
	if len(d.Problems) != 0 || d.Reference != "R-1" || d.CommodityID != 12 || *d.Weight != 3.25 || d.WeightNet != nil || d.OrganiserID != "o" || len(d.Tags) != 2 {
		t.Fatalf("draft %+v", d)
	}
	d = m.Draft([]string{"R-2", "1.5", "2026-01-01", "NaN"}, Defaults{})
	if len(d.Problems) != 2 || d.Weight != nil || d.CommodityID != 0 {
		t.Fatalf("problems %v", d.Problems)
	}
	var f apierr.Fields
	d.Validate(&f)
	if got := f.List(); len(got) != 4 || got[0].Path != "commodityId" || got[2].Path != "organiserId" {
		t.Fatalf("validation %v", got)
	}
}

// FuzzRowMapping maps arbitrary header and row cells (as CSV or XLSX readers
// hand them over) to drafts: never a panic; a header either maps or fails
// validation; a row's failures are field errors on template columns, and a
// clean row has a usable commodity id and finite weights.
func FuzzRowMapping(f *testing.F) {
	f.Add("organiserId,organiserName,commodityId,reference,deliveryDateISO,weight,weightNet,ticketNumber,vehicleRegistration,pickupPostcode,dropoffPostcode,tags",
		"o,O,1,R,2026-01-01,1,2,T,V,P,D,a;b")
	f.Add("reference,commodityId,deliveryDateISO", "R,1e3,2026-01-01")
	f.Add("reference,commodityId,deliveryDateISO,weight", "R,-1,x,Inf")
	f.Add("reference,reference", "a,b")
	f.Add("REFERENCE,\ufeffcommodityid,deliverydateiso", ",,,,,,")
	f.Fuzz(func(t *testing.T, header, row string) {
		m, err := NewMapping(strings.Split(header, ","))
		if err != nil {
			if !apierr.IsCode(err, apierr.CodeValidation) {
				t.Fatalf("header %q: %v", header, err)
			}
			return
		}
		d := m.Draft(strings.Split(row, ","), Defaults{OrganiserID: "o", OrganiserName: "O"})
		for _, fe := range d.Problems {
			if !contains(Template, fe.Path) {
				t.Fatalf("error on %q, not a column", fe.Path)
			}
		}
		if len(d.Problems) == 0 {
			if d.CommodityID < 1 {
				t.Fatalf("row %q: commodity %d", row, d.CommodityID)
			}
			for _, w := range []*float64{d.Weight, d.WeightNet} {
				if w != nil && (*w != *w || *w > 1e308 || *w < -1e308) {
					t.Fatalf("row %q: weight %v", row, *w)
				}
			}
		}
		for _, tag := range d.Tags {
			if tag == "" || strings.Contains(tag, ";") || strings.TrimSpace(tag) != tag {
				t.Fatalf("tag %q", tag)
			}
		}
		var fields apierr.Fields
		d.Validate(&fields) // the service's checks never panic on mapped rows
		if len(fields.List()) < len(d.Problems) {
			t.Fatalf("problems %v lost in %v", d.Problems, fields.List())
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
