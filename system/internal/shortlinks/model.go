// Package shortlinks creates short URLs from configured templates and serves
// their redirect, counting visits. Creation is public, so the target must be
// an absolute http(s) URL on the configured host allow-list: the service must
// never become an open redirector.
package shortlinks

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/httpx"
	"golang.org/x/net/idna"
)

// DefaultTemplate exists out of the box: {base_url}/s/{code}, no UTM defaults.
const DefaultTemplate = "default"

// Limits of the inputs.
const (
	MaxURLLen      = 2048
	MaxUTMLen      = 100
	maxTemplateLen = 64
)

// Template turns a code into a short URL and carries UTM defaults.
type Template struct {
	Name string
	// Pattern is an absolute URL holding "{code}".
	Pattern     string
	UTMSource   string
	UTMMedium   string
	UTMCampaign string
}

// ShortURL answers the short URL of a code.
func (t Template) ShortURL(code string) string { return strings.ReplaceAll(t.Pattern, "{code}", code) }

// Templates are the configured templates by name.
type Templates map[string]Template

// NewTemplates reads shortlinks.templates. A template's base_url is a pattern:
// "{base_url}" stands for the API's base URL and "{code}" for the code; without
// "{code}", "/s/{code}" is appended. `default` ({base_url}/s/{code}) exists
// unless the configuration defines it.
func NewTemplates(cfg []LinkTemplate, baseURL string) (Templates, error) {
	ts := Templates{DefaultTemplate: {Name: DefaultTemplate, Pattern: strings.TrimRight(baseURL, "/") + "/s/{code}"}}
	seen := map[string]bool{}
	for _, c := range cfg {
		name := strings.TrimSpace(c.Name)
		if name == "" || len(name) > maxTemplateLen {
			return nil, fmt.Errorf("shortlinks.templates: a template needs a name of 1 to %d characters", maxTemplateLen)
		}
		if seen[name] {
			return nil, fmt.Errorf("shortlinks.templates: %q is defined twice", name)
		}
		seen[name] = true
		pattern := strings.ReplaceAll(strings.TrimSpace(c.BaseURL), "{base_url}", strings.TrimRight(baseURL, "/"))
		if pattern == "" {
			pattern = strings.TrimRight(baseURL, "/")
		}
		if !strings.Contains(pattern, "{code}") {
			pattern = strings.TrimRight(pattern, "/") + "/s/{code}"
		}
		u, err := url.Parse(strings.ReplaceAll(pattern, "{code}", "code"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("shortlinks.templates.%s: base_url must be an absolute http(s) URL", name)
		}
		ts[name] = Template{Name: name, Pattern: pattern, UTMSource: c.UTMSource, UTMMedium: c.UTMMedium, UTMCampaign: c.UTMCampaign}
	}
	return ts, nil
}

// AllowList holds the hosts short links may point to, in ASCII (IDNA) lower
// case: exact hosts, and "*.example.com" for every subdomain of example.com.
type AllowList struct {
	exact    map[string]bool
	suffixes []string
}

// NewAllowList reads shortlinks.allowed_hosts. An empty list does not mean
// "anything": creation is public, so it allows only the host of base_url (the
// API's own pages) and nothing else.
func NewAllowList(hosts []string, baseURL string) (AllowList, error) {
	a := AllowList{exact: map[string]bool{}}
	if len(hosts) == 0 {
		u, err := url.Parse(baseURL)
		if err != nil || u.Hostname() == "" {
			return a, errors.New("base_url has no host for the short-link allow-list")
		}
		hosts = []string{u.Hostname()}
	}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		wildcard := strings.HasPrefix(h, "*.")
		ascii, err := asciiHost(strings.TrimPrefix(h, "*."))
		if err != nil {
			return a, fmt.Errorf("shortlinks.allowed_hosts: %q: %w", h, err)
		}
		if wildcard {
			a.suffixes = append(a.suffixes, "."+ascii)
		} else {
			a.exact[ascii] = true
		}
	}
	return a, nil
}

// Allows tells whether an ASCII lower-case host is on the list.
func (a AllowList) Allows(host string) bool {
	if a.exact[host] {
		return true
	}
	for _, s := range a.suffixes {
		if strings.HasSuffix(host, s) && len(host) > len(s) {
			return true
		}
	}
	return false
}

// asciiHost turns a host name into its lower-case IDNA ASCII form, refusing
// anything that is not a valid host name (so that look-alike Unicode hosts
// are compared by what DNS resolves, not by how they look).
func asciiHost(h string) (string, error) {
	if h == "" {
		return "", errors.New("empty host")
	}
	if strings.HasSuffix(h, ".") {
		return "", errors.New("trailing dot")
	}
	if ip := net.ParseIP(h); ip != nil {
		return ip.String(), nil
	}
	ascii, err := idna.Lookup.ToASCII(h)
	if err != nil {
		return "", errors.New("not a valid host name")
	}
	return strings.ToLower(ascii), nil
}

// Input is the body of "create a short URL".
type Input struct {
	Template string  `json:"template"`
	Source   *string `json:"source"`
	Campaign *string `json:"campaign"`
	URL      string  `json:"url"`
}

// Link is a validated short-link request.
type Link struct {
	Template Template
	// URL is the target as given, with scheme and host normalised.
	URL      string
	Source   string
	Campaign string
	// Target is where the short link redirects: URL with the UTM parameters.
	Target string
	// Hash identifies (template, url, source, campaign): the same input answers the same link.
	Hash string
}

// NewLink validates a request against the templates and the allow-list,
// reporting every failing field.
func NewLink(in Input, ts Templates, allow AllowList) (Link, error) {
	var f apierr.Fields
	var l Link
	name := strings.TrimSpace(in.Template)
	if f.Required("template", name) {
		t, ok := ts[name]
		if f.Check(ok, "template", "unknown", "is not a configured link template") {
			l.Template = t
		}
	}
	l.Source = utm(&f, "source", in.Source)
	l.Campaign = utm(&f, "campaign", in.Campaign)
	if u, fe := CheckTarget(in.URL, allow); fe != nil {
		f.Add("url", fe.Code, fe.Message, fe.Data)
	} else {
		l.URL = u.String()
		if l.Template.Name != "" {
			l.Target = withUTM(u, l.Template, l.Source, l.Campaign)
		}
	}
	if err := f.Err(); err != nil {
		return Link{}, err
	}
	sum := sha256.Sum256([]byte(l.Template.Name + "\x00" + l.URL + "\x00" + l.Source + "\x00" + l.Campaign))
	l.Hash = hex.EncodeToString(sum[:])
	return l, nil
}

func utm(f *apierr.Fields, path string, v *string) string {
	if v == nil {
		return ""
	}
	s := strings.TrimSpace(*v)
	if f.MaxLen(path, s, MaxUTMLen) {
		f.Check(strings.IndexFunc(s, unicode.IsControl) < 0, path, "format", "must not contain control characters")
	}
	return s
}

func urlError(code, msg string) *apierr.FieldError {
	return &apierr.FieldError{Path: "url", Code: code, Message: msg, Data: map[string]any{}}
}

// CheckTarget accepts an absolute http(s) URL without credentials whose host
// is on the allow-list, and answers it with a lower-case scheme and an ASCII
// lower-case host. Anything a browser might read differently from Go's parser
// (backslashes, whitespace, control characters, percent-encoded hosts, a
// trailing dot) is refused rather than interpreted.
func CheckTarget(raw string, allow AllowList) (*url.URL, *apierr.FieldError) {
	s := strings.TrimSpace(raw)
	switch {
	case s == "":
		return nil, urlError("required", "is required")
	case len(s) > MaxURLLen:
		return nil, urlError("max_length", fmt.Sprintf("must be at most %d characters", MaxURLLen))
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == '\\' }) >= 0:
		return nil, urlError("format", "must not contain spaces, control characters or backslashes")
	}
	u, err := url.Parse(s)
	if err != nil {
		if a, ok := authorityOf(s); ok && strings.Contains(a, "%") {
			return nil, urlError("host", "must not have a percent-encoded host")
		}
		return nil, urlError("format", "must be an absolute URL")
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return nil, urlError("scheme", "must be an absolute http or https URL")
	}
	authority, ok := authorityOf(s)
	if !ok || u.Opaque != "" || u.Host == "" {
		return nil, urlError("format", "must be an absolute URL with a host (scheme://host/...)")
	}
	if u.User != nil || strings.Contains(authority, "@") {
		return nil, urlError("credentials", "must not contain credentials (user:password@)")
	}
	if strings.Contains(authority, "%") {
		return nil, urlError("host", "must not have a percent-encoded host")
	}
	host, err := asciiHost(u.Hostname())
	if err != nil {
		return nil, urlError("host", "has an invalid host: "+err.Error())
	}
	if !allow.Allows(host) {
		return nil, &apierr.FieldError{Path: "url", Code: "host_not_allowed", Message: "host " + host + " is not on the allow-list", Data: map[string]any{"host": host}}
	}
	u.Scheme = scheme
	if p := u.Port(); p != "" {
		host = net.JoinHostPort(host, p)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6 literal
	}
	u.Host = host
	return u, nil
}

// authorityOf answers the authority of an absolute URL string (after "//",
// before the path, query or fragment).
func authorityOf(s string) (string, bool) {
	i := strings.Index(s, "://")
	if i < 0 {
		return "", false
	}
	rest := s[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	return rest, rest != ""
}

// withUTM answers u with utm_source, utm_medium and utm_campaign set (the
// request's values, else the template's defaults); the target's other query
// parameters keep their order and encoding.
func withUTM(u *url.URL, t Template, source, campaign string) string {
	set := [][2]string{{"utm_source", orDefault(source, t.UTMSource)}, {"utm_medium", t.UTMMedium}, {"utm_campaign", orDefault(campaign, t.UTMCampaign)}}
	replaced := map[string]bool{}
	for _, kv := range set {
		if kv[1] != "" {
			replaced[kv[0]] = true
		}
	}
	var parts []string
	for _, p := range strings.Split(u.RawQuery, "&") {
		if p == "" {
			continue
		}
		k, _, _ := strings.Cut(p, "=")
		if key, err := url.QueryUnescape(k); err == nil && replaced[key] {
			continue
		}
		parts = append(parts, p)
	}
	for _, kv := range set {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+url.QueryEscape(kv[1]))
		}
	}
	out := *u
	out.RawQuery = strings.Join(parts, "&")
	out.ForceQuery = false
	return out.String()
}

func orDefault(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// Agent classes of a visit (the raw user agent is not stored).
const (
	AgentBot     = "bot"
	AgentTool    = "tool"
	AgentMobile  = "mobile"
	AgentTablet  = "tablet"
	AgentDesktop = "desktop"
	AgentOther   = "other"
	AgentUnknown = "unknown"
)

var (
	botMarks  = []string{"bot", "crawl", "spider", "slurp", "facebookexternalhit", "embedly", "preview", "whatsapp", "bingpreview", "headlesschrome", "lighthouse"}
	toolMarks = []string{"curl/", "wget/", "python-requests", "python-urllib", "go-http-client", "okhttp", "axios", "node-fetch", "httpie", "java/", "libwww", "postman"}
)

// ClassifyAgent sorts a User-Agent into bot (crawlers and link previews, so
// that they do not pass for readers), tool, tablet, mobile, desktop or other.
func ClassifyAgent(ua string) string {
	s := strings.ToLower(strings.TrimSpace(ua))
	if s == "" {
		return AgentUnknown
	}
	for _, m := range botMarks {
		if strings.Contains(s, m) {
			return AgentBot
		}
	}
	for _, m := range toolMarks {
		if strings.Contains(s, m) {
			return AgentTool
		}
	}
	switch {
	case strings.Contains(s, "ipad") || strings.Contains(s, "tablet") || (strings.Contains(s, "android") && !strings.Contains(s, "mobile")):
		return AgentTablet
	case strings.Contains(s, "mobi") || strings.Contains(s, "iphone") || strings.Contains(s, "ipod") || strings.Contains(s, "android") || strings.Contains(s, "windows phone"):
		return AgentMobile
	case strings.HasPrefix(s, "mozilla/") || strings.HasPrefix(s, "opera/"):
		return AgentDesktop
	}
	return AgentOther
}

// ReferrerHost answers the lower-case host of an http(s) Referer, "" otherwise;
// only the host is kept (paths can carry personal data).
func ReferrerHost(referer string) string {
	u, err := url.Parse(strings.TrimSpace(referer))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	h := strings.ToLower(u.Hostname())
	// A header is not checked text: a host that is not UTF-8 (or that the cut
	// below would split) cannot be stored, and a visit is not refused for it.
	if len(h) > 253 {
		h = h[:253]
	}
	if code, _ := httpx.TextProblem(h); code != "" {
		return ""
	}
	return h
}

// ValidCode tells whether a path segment can be a code at all, so that junk
// never reaches the database.
func ValidCode(code string) bool {
	if len(code) < 4 || len(code) > 32 {
		return false
	}
	for _, r := range code {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
