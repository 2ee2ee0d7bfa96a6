package loads

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/gin-gonic/gin"
)

var (
	organiser = &auth.Principal{UserID: "u1", OrgID: "org-o", Orgs: []string{"org-o"}}
	carrier   = &auth.Principal{UserID: "u2", OrgID: "org-c", Orgs: []string{"org-c"}}
	driver    = &auth.Principal{UserID: "u3", OrgID: "org-d"}
	outsider  = &auth.Principal{UserID: "u4", OrgID: "org-x"}
)

func newLoad(status Status) *Load {
	return &Load{ID: "L1", Reference: "R1", Organiser: Party{ID: "org-o", Name: "O"}, Carrier: &Party{ID: "org-c", Name: "C"},
		Driver: &Party{ID: "u3", Name: "D"}, Status: status}
}

// TestStateMachine walks every transition from every state and party.
func TestStateMachine(t *testing.T) {
	now := time.Date(2026, 11, 21, 15, 4, 5, 0, time.UTC)
	type step func(l *Load, p *auth.Principal) error
	steps := map[string]step{
		"driver": func(l *Load, p *auth.Principal) error { return l.SendToDriver(p, Party{ID: "u9", Name: "New"}, now) },
		"carrier": func(l *Load, p *auth.Principal) error {
			return l.SendToCarrier(p, Party{ID: "org-c2", Name: "C2"}, now)
		},
		"proof": func(l *Load, p *auth.Principal) error {
			return l.Complete(p, Proof{WeightNet: 1, TicketNumber: "T", VehicleRegistration: "V"}, now)
		},
	}
	cases := []struct {
		from Status
		step string
		who  *auth.Principal
		code apierr.Code // "" for success
		to   Status
	}{
		{StatusUpcoming, "driver", organiser, "", StatusInTransit},
		{StatusUpcoming, "driver", carrier, "", StatusInTransit},
		{StatusUpcoming, "driver", driver, apierr.CodeForbidden, StatusUpcoming},
		{StatusInTransit, "driver", carrier, "", StatusInTransit},
		{StatusCompleted, "driver", organiser, apierr.CodeConflict, StatusCompleted},
		{StatusUpcoming, "carrier", organiser, "", StatusUpcoming},
		{StatusInTransit, "carrier", organiser, "", StatusInTransit},
		{StatusUpcoming, "carrier", carrier, apierr.CodeForbidden, StatusUpcoming},
		{StatusUpcoming, "carrier", driver, apierr.CodeForbidden, StatusUpcoming},
		{StatusCompleted, "carrier", organiser, apierr.CodeConflict, StatusCompleted},
		{StatusUpcoming, "proof", organiser, "", StatusCompleted},
		{StatusUpcoming, "proof", carrier, "", StatusCompleted},
		{StatusInTransit, "proof", driver, "", StatusCompleted},
		{StatusInTransit, "proof", outsider, apierr.CodeNotFound, StatusInTransit},
		{StatusCompleted, "proof", driver, apierr.CodeConflict, StatusCompleted},
	}
	for _, c := range cases {
		l := newLoad(c.from)
		err := steps[c.step](l, c.who)
		switch {
		case c.code == "" && err != nil:
			t.Errorf("%s %s by %s: %v", c.from, c.step, c.who.UserID, err)
		case c.code != "" && !apierr.IsCode(err, c.code):
			t.Errorf("%s %s by %s: %v, want %s", c.from, c.step, c.who.UserID, err, c.code)
		}
		if l.Status != c.to {
			t.Errorf("%s %s by %s: status %s, want %s", c.from, c.step, c.who.UserID, l.Status, c.to)
		}
		if c.code == "" && !l.UpdatedAt.Equal(now) {
			t.Errorf("%s %s: updatedAt not set", c.from, c.step)
		}
	}
}

func TestReapply(t *testing.T) {
	now := time.Now()
	c := Commodity{ID: 1, Name: "Wheat", Unit: "tonne", Conversion: 1000}
	d := Draft{OrganiserID: "org-o", OrganiserName: "O", Reference: "R1", DeliveryDateISO: "2026-01-02", Tags: []string{"a"}}
	var f apierr.Fields
	d.Validate(&f)
	if !f.Empty() {
		t.Fatal(f.Err())
	}
	l := NewLoad("L1", &d, c, nil, "u1", now)
	if changed, err := l.Reapply(&d, c, now); changed || err != nil {
		t.Fatalf("same draft: changed=%v err=%v", changed, err)
	}
	d2 := d
	w := 12.5
	d2.Weight = &w
	if changed, err := l.Reapply(&d2, c, now); !changed || err != nil || *l.Weight != 12.5 {
		t.Fatalf("new weight: changed=%v err=%v", changed, err)
	}
	l.Status = StatusCompleted
	if changed, err := l.Reapply(&d2, c, now); changed || err != nil {
		t.Fatalf("completed, same data: changed=%v err=%v", changed, err)
	}
	if _, err := l.Reapply(&d, c, now); !apierr.IsCode(err, apierr.CodeConflict) || *l.Weight != 12.5 {
		t.Fatalf("completed, new data: %v, weight %v", err, *l.Weight)
	}
}

func TestSearchText(t *testing.T) {
	l := newLoad(StatusUpcoming)
	l.Reference, l.PickupPostcode, l.VehicleRegistration = "PO/77", "CB1 2AB", "ab12 cde"
	got := l.SearchText()
	want := "|po77|ab12cde|cb12ab|o|c|d|"
	if got != want {
		t.Fatalf("search text %q, want %q", got, want)
	}
}

// FuzzNormaliseText: the normalised text holds only lower-case letters and
// digits (so it never holds LIKE wildcards or the field separator) and
// normalising twice changes nothing.
func FuzzNormaliseText(f *testing.F) {
	for _, s := range []string{"AB12 3CD", "50%_off", "Ærø|İstanbul", "\x00\xff", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := NormaliseText(s)
		for _, r := range n {
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) || strings.ContainsRune("%_|", r) {
				t.Fatalf("NormaliseText(%q) = %q holds %q", s, n, r)
			}
		}
		if NormaliseText(n) != n {
			t.Fatalf("not idempotent: %q → %q → %q", s, n, NormaliseText(n))
		}
	})
}

// FuzzParseSearch feeds raw query strings to the search's parser: it never
// panics, a failure is a typed 400, and a success is a usable filter.
func FuzzParseSearch(f *testing.F) {
	for _, q := range []string{
		"", "limit=5&offset=10&sortBy=reference&sortDesc=true", "startDateISO=2026-01-01&endDateISO=2026-12-31T10:00:00Z",
		"f:status=completed&f:organiserId=o&f:carrierId=c&query=CB1%202AB&format=csv", "limit=-1&sortBy=x", "query=%25%5F",
		"startDateISO=2026-02-30", "endDateISO=2026-01-01&startDateISO=2026-02-01", "limit=99999999999999999999",
	} {
		f.Add(q)
	}
	gin.SetMode(gin.TestMode)
	f.Fuzz(func(t *testing.T, raw string) {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		req, err := http.NewRequest(http.MethodGet, "/logistics/v1/loads", nil)
		if err != nil {
			t.Skip()
		}
		req.URL.RawQuery = raw
		c.Request = req
		got, err := parseSearch(c)
		if err != nil {
			e, ok := apierr.As(err)
			if !ok || e.Status() != http.StatusBadRequest {
				t.Fatalf("%q: %v is not a 400", raw, err)
			}
			return
		}
		fl := got.Filter
		if fl.Limit < 1 || fl.Limit > 100 || fl.Offset < 0 || sortColumns[fl.SortBy] == "" {
			t.Fatalf("%q: bad page %+v", raw, fl)
		}
		if fl.Text != NormaliseText(fl.Text) || len([]rune(fl.Text)) > maxSearchRunes {
			t.Fatalf("%q: text %q", raw, fl.Text)
		}
		if fl.Status != "" && fl.Status != StatusUpcoming && fl.Status != StatusInTransit && fl.Status != StatusCompleted {
			t.Fatalf("%q: status %q", raw, fl.Status)
		}
		if fl.From != nil && fl.To != nil && fl.To.Before(*fl.From) {
			t.Fatalf("%q: inverted range", raw)
		}
	})
}
