package shortlinks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
	"github.com/agritrade/api/system/internal/shortlinks"
	"github.com/uptrace/bun"
)

var (
	ann = auth.Principal{UserID: "user-ann", Name: "Ann Smith", OrgID: "org-farm", OrgName: "Smith Farms", Orgs: []string{"org-farm"}}
	bob = auth.Principal{UserID: "user-bob", Name: "Bob Buyer", OrgID: "org-buyer", OrgName: "Buyer Ltd", Orgs: []string{"org-buyer"}}
)

var allowed = []string{"agritrade.example", "*.farmers.example", "münchen.example"}

func newServer(t testing.TB, db *bun.DB, configure func(c *config.Config)) *testkit.Server {
	return testkit.NewServer(t, db, func(p *app.Platform) []module.Module {
		return []module.Module{system.New(p.Deps(system.Name))}
	}, testkit.Options{Configure: func(c *config.Config) {
		c.Set("shortlinks.allowed_hosts", allowed)
		c.Set("shortlinks.templates", []shortlinks.LinkTemplate{
			{Name: "newsletter", BaseURL: "https://agri.link/{code}", UTMSource: "newsletter", UTMMedium: "email"},
			{Name: "app", BaseURL: "{base_url}/go"},
		})
		c.RateLimit.PerMinute = 0 // limits have their own test
		if configure != nil {
			configure(c)
		}
	}})
}

type created struct {
	Status, Message, ID, ShortURL, Code string
}

func create(t *testing.T, s *testkit.Server, token string, body map[string]any) created {
	t.Helper()
	r := s.Do(testkit.Request{Method: http.MethodPost, Path: "/system/v1/short-urls", Token: token, JSON: body})
	if r.Status != http.StatusOK {
		t.Fatalf("create %v: %d %s", body, r.Status, r.Body)
	}
	var c created
	r.Decode(t, &c)
	return c
}

func follow(t *testing.T, s *testkit.Server, code string, header map[string]string) *testkit.Response {
	t.Helper()
	return s.Do(testkit.Request{Method: http.MethodGet, Path: "/s/" + code, Header: header})
}

func TestCreateFollowAndCount(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db, nil)
		annTok := s.Token(ann)
		plain := create(t, s, "", map[string]any{"template": "default", "url": "https://agritrade.example/listings/42"})
		if plain.Status != "success" || len(plain.Code) != shortlinks.CodeLen || plain.ShortURL != "http://api.test/s/"+plain.Code || plain.ID == "" {
			t.Fatalf("created %+v", plain)
		}
		// The same input answers the same link; null and absent are the same; scheme and host case do not matter.
		again := create(t, s, "", map[string]any{"template": "default", "url": "HTTPS://AgriTrade.Example/listings/42", "source": nil, "campaign": ""})
		if again.Code != plain.Code || again.ID != plain.ID {
			t.Fatalf("same input gave %s, want %s", again.Code, plain.Code)
		}
		tagged := create(t, s, annTok, map[string]any{"template": "default", "url": "https://agritrade.example/listings?id=5&utm_source=old&b", "source": "facebook", "campaign": "spring lambs"})
		if tagged.Code == plain.Code {
			t.Fatal("a different source answered the same code")
		}
		news := create(t, s, "", map[string]any{"template": "newsletter", "url": "https://shop.farmers.example/feed"})
		if news.ShortURL != "https://agri.link/"+news.Code {
			t.Fatalf("newsletter short URL %s", news.ShortURL)
		}
		appLink := create(t, s, "", map[string]any{"template": "app", "url": "https://agritrade.example/"})
		if appLink.ShortURL != "http://api.test/go/s/"+appLink.Code {
			t.Fatalf("app short URL %s", appLink.ShortURL)
		}
		idn := create(t, s, "", map[string]any{"template": "default", "url": "https://münchen.example/markt?q=1"})
		if punycode := create(t, s, "", map[string]any{"template": "default", "url": "https://xn--mnchen-3ya.example/markt?q=1"}); punycode.Code != idn.Code {
			t.Fatal("the Unicode and the ASCII form of one host gave two links")
		}

		for code, want := range map[string]string{
			plain.Code:   "https://agritrade.example/listings/42",
			tagged.Code:  "https://agritrade.example/listings?id=5&b&utm_source=facebook&utm_campaign=spring+lambs",
			news.Code:    "https://shop.farmers.example/feed?utm_source=newsletter&utm_medium=email",
			appLink.Code: "https://agritrade.example/",
			idn.Code:     "https://xn--mnchen-3ya.example/markt?q=1",
		} {
			r := follow(t, s, code, nil)
			if r.Status != http.StatusFound || r.Header.Get("Location") != want || r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("X-API-Version") != "system/"+system.Version {
				t.Fatalf("follow %s: %d Location %q (want %q) headers %v", code, r.Status, r.Header.Get("Location"), want, r.Header)
			}
		}
		visitors := []map[string]string{
			{"User-Agent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/126.0 Safari/537.36", "Referer": "https://news.example.org/article/123?user=ann"},
			{"User-Agent": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) Mobile/15E148", "Referer": "https://news.example.org/other"},
			{"User-Agent": "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"},
			{"User-Agent": "curl/8.5.0", "Referer": "javascript:alert(1)"},
		}
		for _, v := range visitors {
			if r := follow(t, s, tagged.Code, v); r.Status != http.StatusFound {
				t.Fatalf("follow: %d", r.Status)
			}
		}
		statsPath := "/system/v1/short-urls/" + tagged.Code
		s.Run(t, []testkit.Scenario{
			{Name: "follow404unknown", Req: testkit.Request{Method: http.MethodGet, Path: "/s/Zz9Zz9Zz"}, Status: 404, Code: "not_found"},
			{Name: "follow404junk", Req: testkit.Request{Method: http.MethodGet, Path: "/s/a$b%27c"}, Status: 404, Code: "not_found"},
			{Name: "stats401", Req: testkit.Request{Method: http.MethodGet, Path: statsPath}, Status: 401, Code: "unauthorized"},
			{Name: "stats404otherUser", Req: testkit.Request{Method: http.MethodGet, Path: statsPath, Token: s.Token(bob)}, Status: 404, Code: "not_found"},
			{Name: "stats404anonymousLinkForUser", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/short-urls/" + plain.Code, Token: annTok}, Status: 404, Code: "not_found"},
			{Name: "stats200admin", Req: testkit.Request{Method: http.MethodGet, Path: "/system/v1/short-urls/" + plain.Code, Token: s.Token(testkit.Admin)}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var st shortlinks.Stats
					r.Decode(t, &st)
					if st.Visits != 1 || st.ByAgentClass["unknown"] != 1 {
						t.Fatalf("stats %s", r.Body)
					}
				}},
			{Name: "stats200creator", Req: testkit.Request{Method: http.MethodGet, Path: statsPath, Token: annTok}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var st shortlinks.Stats
					r.Decode(t, &st)
					if st.Visits != 5 || st.LastVisitAtUTC == nil || *st.Source != "facebook" || *st.Campaign != "spring lambs" {
						t.Fatalf("stats %s", r.Body)
					}
					want := map[string]int64{"desktop": 1, "mobile": 1, "bot": 1, "tool": 1, "unknown": 1}
					if fmt.Sprint(st.ByAgentClass) != fmt.Sprint(want) {
						t.Fatalf("agent classes %v, want %v", st.ByAgentClass, want)
					}
					if len(st.ByReferrerHost) != 2 || st.ByReferrerHost[0] != (shortlinks.HostCount{Host: "", Count: 3}) || st.ByReferrerHost[1] != (shortlinks.HostCount{Host: "news.example.org", Count: 2}) {
						t.Fatalf("referrers %+v", st.ByReferrerHost)
					}
				}},
		})
		// No raw IP address, user agent or referrer path is stored anywhere in a visit.
		var rows []map[string]any
		if err := db.NewSelect().Table("system_short_link_visits").Scan(context.Background(), &rows); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 9 { // one per link followed above, and four more of the tagged one
			t.Fatalf("%d visits stored, want 9", len(rows))
		}
		for _, row := range rows {
			for col, v := range row {
				sv := fmt.Sprint(v)
				if strings.Contains(sv, "192.0.2.1") || strings.Contains(sv, "Mozilla") || strings.Contains(sv, "article") {
					t.Fatalf("visit column %s holds %q", col, sv)
				}
			}
		}
	})
}

func TestAbuseIsRefused(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db, nil)
		cases := []struct{ name, url, code string }{
			{"javascript", "javascript:alert(document.cookie)", "scheme"},
			{"javascriptWithSlashes", "JavaScript://agritrade.example/%0Aalert(1)", "scheme"},
			{"data", "data:text/html,<script>alert(1)</script>", "scheme"},
			{"vbscript", "vbscript:msgbox(1)", "scheme"},
			{"ftp", "ftp://agritrade.example/file", "scheme"},
			{"file", "file:///etc/passwd", "scheme"},
			{"schemeRelative", "//evil.example/x", "scheme"},
			{"relative", "/s/abc", "scheme"},
			{"oneSlash", "http:/agritrade.example/x", "format"},
			{"threeSlashes", "https:///agritrade.example/x", "format"},
			{"opaque", "https:agritrade.example", "format"},
			{"otherHost", "https://evil.example/", "host_not_allowed"},
			{"allowedAsSubdomainOfEvil", "https://agritrade.example.evil.example/", "host_not_allowed"},
			{"allowedAsSuffix", "https://evilagritrade.example/", "host_not_allowed"},
			{"wildcardApexNotIncluded", "https://farmers.example/", "host_not_allowed"},
			{"allowedInQueryOnly", "https://evil.example/?next=https://agritrade.example/", "host_not_allowed"},
			{"userinfoHost", "https://agritrade.example@evil.example/", "credentials"},
			{"credentials", "https://user:secret@agritrade.example/", "credentials"},
			{"emptyUserinfo", "https://@agritrade.example/", "credentials"},
			{"backslashUserinfo", `https://evil.example\@agritrade.example/`, "format"},
			{"backslashes", `https:\\evil.example`, "format"},
			{"encodedDot", "https://agritrade%2Eexample/", "host"},
			{"encodedHost", "https://%65vil.example/", "host"},
			{"encodedAt", "https://evil.example%40agritrade.example/", "host"},
			{"trailingDot", "https://agritrade.example./", "host"},
			{"cyrillicLookalike", "https://аgritrade.example/", "host_not_allowed"},
			{"punycodeLookalike", "https://xn--gritrade-9fg.example/", "host_not_allowed"},
			{"invalidIDN", "https://xn--a.example/", "host"},
			{"loopback", "http://127.0.0.1:8080/admin", "host_not_allowed"},
			{"ipv6", "http://[::1]/", "host_not_allowed"},
			{"space", "https://agritrade.example /x", "format"},
			{"crlf", "https://agritrade.example/\r\nSet-Cookie:%20a=b", "format"},
			{"tab", "https://agritrade.example/\tx", "format"},
			{"tooLong", "https://agritrade.example/" + strings.Repeat("a", 2048), "max_length"},
			{"empty", "", "required"},
		}
		var scenarios []testkit.Scenario
		for _, c := range cases {
			want := c.code
			scenarios = append(scenarios, testkit.Scenario{
				Name: "create400" + c.name, Status: 400, Code: "validation_failed",
				Req: testkit.Request{Method: http.MethodPost, Path: "/system/v1/short-urls", JSON: map[string]any{"template": "default", "url": c.url}},
				Check: func(t *testing.T, r *testkit.Response) {
					v := r.Error(t).Validation
					if len(v) != 1 || v[0].Path != "url" || v[0].Code != want {
						t.Fatalf("validation %+v, want url/%s", v, want)
					}
				},
			})
		}
		scenarios = append(scenarios,
			testkit.Scenario{Name: "create400everyField", Status: 400, Code: "validation_failed",
				Req: testkit.Request{Method: http.MethodPost, Path: "/system/v1/short-urls", JSON: map[string]any{"template": "nope", "url": "javascript:x", "source": strings.Repeat("s", 101), "campaign": "a\tb"}},
				Check: func(t *testing.T, r *testkit.Response) {
					if got := strings.Join(r.Error(t).Paths(), ","); got != "template,source,campaign,url" {
						t.Fatalf("paths %s", got)
					}
				}},
			// Text that cannot be stored is refused by the binder, before the
			// feature sees the body: only it is named.
			testkit.Scenario{Name: "create400NULInCampaign", Status: 400, Code: "validation_failed",
				Req: testkit.Request{Method: http.MethodPost, Path: "/system/v1/short-urls", JSON: map[string]any{"template": "nope", "url": "javascript:x", "campaign": "a\x00b"}},
				Check: func(t *testing.T, r *testkit.Response) {
					v := r.Error(t).Validation
					if len(v) != 1 || v[0].Path != "campaign" || v[0].Code != "nul_character" {
						t.Fatalf("validation %+v", v)
					}
				}},
			testkit.Scenario{Name: "create400missing", Status: 400, Code: "validation_failed",
				Req: testkit.Request{Method: http.MethodPost, Path: "/system/v1/short-urls", JSON: map[string]any{}},
				Check: func(t *testing.T, r *testkit.Response) {
					if got := strings.Join(r.Error(t).Paths(), ","); got != "template,url" {
						t.Fatalf("paths %s", got)
					}
				}},
			testkit.Scenario{Name: "create400malformed", Status: 400, Code: "bad_request",
				Req: testkit.Request{Method: http.MethodPost, Path: "/system/v1/short-urls", JSON: `{"url":`}},
			testkit.Scenario{Name: "create401badToken", Status: 401, Code: "unauthorized",
				Req: testkit.Request{Method: http.MethodPost, Path: "/system/v1/short-urls", Token: "not-a-token", JSON: map[string]any{"template": "default", "url": "https://agritrade.example/"}}},
			testkit.Scenario{Name: "create200port", Status: 200,
				Req: testkit.Request{Method: http.MethodPost, Path: "/system/v1/short-urls", JSON: map[string]any{"template": "default", "url": "http://agritrade.example:8443/x?y=1#frag"}}},
		)
		s.Run(t, scenarios)
		var n int
		if err := db.NewSelect().Table("system_short_links").ColumnExpr("COUNT(*)").Scan(context.Background(), &n); err != nil || n != 1 {
			t.Fatalf("%d links stored (err %v), want only the valid one", n, err)
		}
	})
}

func TestEmptyAllowListAllowsOnlyTheAPIHost(t *testing.T) {
	s := newServer(t, testkit.DB(t, testkit.SQLite), func(c *config.Config) { c.Set("shortlinks.allowed_hosts", []string{}) })
	create(t, s, "", map[string]any{"template": "default", "url": "http://api.test/docs"})
	r := s.Do(testkit.Request{Method: http.MethodPost, Path: "/system/v1/short-urls", JSON: map[string]any{"template": "default", "url": "https://agritrade.example/"}})
	if r.Status != 400 || r.Error(t).Validation[0].Code != "host_not_allowed" {
		t.Fatalf("empty allow-list let another host through: %d %s", r.Status, r.Body)
	}
}

func TestCreationIsRateLimited(t *testing.T) {
	s := newServer(t, testkit.DB(t, testkit.SQLite), func(c *config.Config) { c.RateLimit.PerMinute, c.RateLimit.Burst = 6, 3 })
	body := map[string]any{"template": "default", "url": "https://agritrade.example/"}
	var codes []int
	for i := 0; i < 5; i++ {
		r := s.Do(testkit.Request{Method: http.MethodPost, Path: "/system/v1/short-urls", JSON: body})
		codes = append(codes, r.Status)
		if r.Status == http.StatusTooManyRequests {
			if r.Error(t).Code != "rate_limited" || r.Header.Get("Retry-After") == "" {
				t.Fatalf("429 without code or Retry-After: %v %s", r.Header, r.Body)
			}
		}
	}
	if fmt.Sprint(codes) != "[200 200 200 429 429]" {
		t.Fatalf("statuses %v, want a burst of 3", codes)
	}
	// Following links is not limited by the creation allowance.
	var code string
	if err := s.Platform.DB.NewSelect().Table("system_short_links").Column("code").Limit(1).Scan(context.Background(), &code); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if r := follow(t, s, code, nil); r.Status != http.StatusFound {
			t.Fatalf("follow %d: %d", i, r.Status)
		}
	}
}

func TestTemplatesConfiguration(t *testing.T) {
	ts, err := shortlinks.NewTemplates([]shortlinks.LinkTemplate{{Name: "default", BaseURL: "https://s.example"}}, "http://api.test")
	if err != nil || ts["default"].ShortURL("abc") != "https://s.example/s/abc" {
		t.Fatalf("overridden default: %v %+v", err, ts)
	}
	for name, cfg := range map[string][]shortlinks.LinkTemplate{
		"no name":      {{BaseURL: "https://s.example"}},
		"duplicate":    {{Name: "a", BaseURL: "https://s.example"}, {Name: "a", BaseURL: "https://t.example"}},
		"not absolute": {{Name: "a", BaseURL: "s.example/{code}"}},
		"javascript":   {{Name: "a", BaseURL: "javascript:{code}"}},
	} {
		if _, err := shortlinks.NewTemplates(cfg, "http://api.test"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := shortlinks.NewAllowList([]string{"bad host!"}, "http://api.test"); err == nil {
		t.Error("an invalid allow-list entry was accepted")
	}
}

func TestClassifyAgentAndReferrer(t *testing.T) {
	for ua, want := range map[string]string{
		"": "unknown",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 Version/17.5 Safari/605.1.15": "desktop",
		"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/126.0 Mobile Safari/537.36":  "mobile",
		"Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 Chrome/126.0 Safari/537.36":         "tablet",
		"Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148":               "tablet",
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)":                       "bot",
		"WhatsApp/2.23.20.0": "bot",
		"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)": "bot",
		"python-requests/2.32.3":                                     "tool",
		"Go-http-client/1.1":                                         "tool",
		"SomethingElse/1.0":                                          "other",
	} {
		if got := shortlinks.ClassifyAgent(ua); got != want {
			t.Errorf("%q: %s, want %s", ua, got, want)
		}
	}
	for ref, want := range map[string]string{
		"https://News.Example.org/a?b=c":       "news.example.org",
		"http://x.example:8080/":               "x.example",
		"android-app://com.google.android.gm/": "",
		"javascript:alert(1)":                  "",
		"not a url at all":                     "",
		"":                                     "",
		"http://\xff\xfe.example/":             "\ufffd\ufffd.example", // lowering replaces bytes that are not UTF-8
		"http://" + strings.Repeat("é", 200):   "",
	} {
		if got := shortlinks.ReferrerHost(ref); got != want {
			t.Errorf("%q: %q, want %q", ref, got, want)
		}
	}
}

// FuzzCheckTarget: whatever the input, an accepted URL is an absolute http(s)
// URL without credentials on an allowed host, and reads the same to Go's
// parser after the round trip (what the Location header will carry).
func FuzzCheckTarget(f *testing.F) {
	allow, err := shortlinks.NewAllowList(allowed, "http://api.test")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{"https://agritrade.example/x?y=1", "javascript:alert(1)", "https://a@agritrade.example", `https://e\@agritrade.example`,
		"https://agritrade%2eexample", "https://münchen.example/", "https://shop.farmers.example:8443/#x", "//agritrade.example", "https://[::1]/", "HTTPS://AGRITRADE.EXAMPLE"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, fe := shortlinks.CheckTarget(raw, allow)
		if fe != nil {
			if fe.Path != "url" || fe.Code == "" {
				t.Fatalf("field error %+v", fe)
			}
			return
		}
		out := u.String()
		back, err := url.Parse(out)
		if err != nil {
			t.Fatalf("accepted %q answers unparseable %q", raw, out)
		}
		if (back.Scheme != "http" && back.Scheme != "https") || back.User != nil || back.Host == "" || !allow.Allows(back.Hostname()) {
			t.Fatalf("accepted %q answers %q", raw, out)
		}
		if strings.IndexFunc(out, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == '\\' }) >= 0 ||
			strings.IndexFunc(back.Host, func(r rune) bool { return r > unicode.MaxASCII }) >= 0 {
			t.Fatalf("accepted %q answers %q with unsafe characters or a non-ASCII host", raw, out)
		}
	})
}
