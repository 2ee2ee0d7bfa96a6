package shortlinks

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/ids"
	"github.com/agritrade/api/platform/logging"
	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
)

// CodeLen is the length of a new code: 62^8 ≈ 2·10^14 codes, so codes cannot
// be enumerated by walking through them.
const CodeLen = 8

// Created is the outcome of a creation.
type Created struct {
	ID       string
	Code     string
	ShortURL string
}

// Visit is what a redirect knows of its visitor (never the IP address).
type Visit struct {
	Referer   string
	UserAgent string
}

// Stats are the visit counts of a link.
type Stats struct {
	Code           string  `json:"code"`
	ShortURL       string  `json:"shortUrl"`
	URL            string  `json:"url"`
	Target         string  `json:"target"`
	Template       string  `json:"template"`
	Source         *string `json:"source"`
	Campaign       *string `json:"campaign"`
	CreatedAtUTC   string  `json:"createdAtUTC"`
	Visits         int64   `json:"visits"`
	LastVisitAtUTC *string `json:"lastVisitAtUTC"`
	// ByAgentClass counts visits per user-agent class.
	ByAgentClass map[string]int64 `json:"byAgentClass"`
	// ByReferrerHost counts visits per referring host ("" for none), top 20.
	ByReferrerHost []HostCount `json:"byReferrerHost"`
}

// HostCount is one referring host and its visits.
type HostCount struct {
	Host  string `json:"host"`
	Count int64  `json:"count"`
}

// Service creates links and follows them.
type Service struct {
	templates Templates
	allow     AllowList
	store     store
	log       logrus.FieldLogger
	now       func() time.Time
}

// NewService checks the templates and the allow-list of the shortlinks
// section; baseURL is the API's ({base_url} of a template, always allowed).
func NewService(st store, sc Config, baseURL string, log logrus.FieldLogger) (*Service, error) {
	ts, err := NewTemplates(sc.Templates, baseURL)
	if err != nil {
		return nil, err
	}
	allow, err := NewAllowList(sc.AllowedHosts, baseURL)
	if err != nil {
		return nil, err
	}
	return &Service{store: st, templates: ts, allow: allow, log: log, now: time.Now}, nil
}

// Create answers the short link of the input: the existing one when the same
// (template, url, source, campaign) was shortened before, else a new one.
// p may be nil (creation is public).
func (s *Service) Create(ctx context.Context, p *auth.Principal, in Input) (*Created, error) {
	l, err := NewLink(in, s.templates, s.allow)
	if err != nil {
		return nil, err
	}
	existing, err := s.store.byHash(ctx, l.Hash)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	if existing != nil {
		return s.created(existing), nil
	}
	row := &linkRow{
		ID: uuid.Must(uuid.NewV7()).String(), InputHash: l.Hash, Template: l.Template.Name, URL: l.URL,
		Source: l.Source, Campaign: l.Campaign, Target: l.Target, CreatedAt: s.now().UTC(),
	}
	if p != nil {
		row.CreatedBy = p.UserID
	}
	for attempt := 0; attempt < 5; attempt++ {
		row.Code = newCode()
		if code, ok := ids.Fixed(ctx); ok && attempt == 0 {
			row.Code = code // the demo's link, cited by the documents' examples
		}
		err = s.store.insert(ctx, row)
		if err == nil {
			logging.Ctx(ctx, s.log).WithField("code", row.Code).WithField("template", row.Template).Debug("short link created")
			return s.created(row), nil
		}
		if !db.IsUniqueViolation(err) {
			return nil, apierr.Internal(err)
		}
		// Either the same input was created concurrently (answer it), or the
		// random code was taken (draw another).
		if existing, err := s.store.byHash(ctx, l.Hash); err != nil {
			return nil, apierr.Internal(err)
		} else if existing != nil {
			return s.created(existing), nil
		}
	}
	return nil, apierr.Internal(fmt.Errorf("no free short code after 5 attempts"))
}

func (s *Service) created(row *linkRow) *Created {
	return &Created{ID: row.ID, Code: row.Code, ShortURL: s.shortURL(row)}
}

func (s *Service) shortURL(row *linkRow) string {
	t, ok := s.templates[row.Template]
	if !ok {
		t = s.templates[DefaultTemplate] // a template removed from the configuration
	}
	return t.ShortURL(row.Code)
}

// Follow answers the target of a code and counts the visit. A failure to
// count is logged, not shown: the visitor still gets where they were going.
func (s *Service) Follow(ctx context.Context, code string, v Visit) (string, error) {
	if !ValidCode(code) {
		return "", apierr.NotFound("short link")
	}
	row, err := s.store.byCode(ctx, code)
	if err != nil {
		return "", apierr.Internal(err)
	}
	if row == nil {
		return "", apierr.NotFound("short link")
	}
	visit := &visitRow{
		ID: uuid.Must(uuid.NewV7()).String(), LinkID: row.ID, VisitedAt: s.now().UTC(),
		ReferrerHost: ReferrerHost(v.Referer), AgentClass: ClassifyAgent(v.UserAgent),
	}
	if err := s.store.InTx(ctx, func(ctx context.Context, tx store) error { return tx.countVisit(ctx, visit) }); err != nil {
		logging.Ctx(ctx, s.log).WithError(err).WithField("code", code).Warn("short link visit not counted")
	}
	logging.Ctx(ctx, s.log).WithField("code", code).WithField("agent", visit.AgentClass).Debug("short link followed")
	return row.Target, nil
}

// Stats answers a link's visit counts to an admin or to its creator; anyone
// else gets 404 (a link's existence is not revealed).
func (s *Service) Stats(ctx context.Context, p *auth.Principal, code string) (*Stats, error) {
	if !ValidCode(code) {
		return nil, apierr.NotFound("short link")
	}
	row, err := s.store.byCode(ctx, code)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	if row == nil || !(p.IsAdmin() || (row.CreatedBy != "" && row.CreatedBy == p.UserID)) {
		return nil, apierr.NotFound("short link")
	}
	agents, err := s.store.breakdown(ctx, row.ID, "agent_class", 20)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	hosts, err := s.store.breakdown(ctx, row.ID, "referrer_host", 20)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	st := &Stats{
		Code: row.Code, ShortURL: s.shortURL(row), URL: row.URL, Target: row.Target, Template: row.Template,
		Source: nonEmpty(row.Source), Campaign: nonEmpty(row.Campaign), CreatedAtUTC: row.CreatedAt.UTC().Format(time.RFC3339),
		Visits: row.VisitCount, ByAgentClass: map[string]int64{}, ByReferrerHost: []HostCount{},
	}
	if row.LastVisitAt != nil {
		last := row.LastVisitAt.UTC().Format(time.RFC3339)
		st.LastVisitAtUTC = &last
	}
	for _, a := range agents {
		st.ByAgentClass[a.Key] = a.Count
	}
	for _, h := range hosts {
		st.ByReferrerHost = append(st.ByReferrerHost, HostCount{Host: h.Key, Count: h.Count})
	}
	return st, nil
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

const codeAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newCode draws a random code; bytes above the largest multiple of 62 are
// dropped so that every character is equally likely.
func newCode() string {
	out := make([]byte, 0, CodeLen)
	buf := make([]byte, 2*CodeLen)
	for len(out) < CodeLen {
		if _, err := rand.Read(buf); err != nil {
			panic(err) // crypto/rand does not fail on supported platforms
		}
		for _, b := range buf {
			if b < 248 && len(out) < CodeLen {
				out = append(out, codeAlphabet[b%62])
			}
		}
	}
	return string(out)
}
