package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// The callers of the authorization matrix. Objects belong to owner's
// organisation (org-a); mate is another member of it. Loads are organised by
// org-a, carried by org-haul (carrier) and driven by driver. admin holds the
// admin role in an organisation of its own.
var (
	mOwner   = auth.Principal{UserID: "u-owner", Name: "Olga Owner", OrgID: "org-a", OrgName: "A Farms", Orgs: []string{"org-a"}}
	mMate    = auth.Principal{UserID: "u-mate", Name: "Milo Mate", OrgID: "org-a", OrgName: "A Farms", Orgs: []string{"org-a"}}
	mOther   = auth.Principal{UserID: "u-other", Name: "Otto Other", OrgID: "org-o", OrgName: "O Trading", Orgs: []string{"org-o"}}
	mCarrier = auth.Principal{UserID: "u-haul", Name: "Hal Haulier", OrgID: "org-haul", OrgName: "Haul Ltd", Orgs: []string{"org-haul"}}
	mDriver  = auth.Principal{UserID: "u-driver", Name: "Dana Driver", OrgID: "org-drive", OrgName: "Dana Driving", Orgs: []string{"org-drive"}, Roles: []string{auth.RoleDriver}}
	mAdmin   = auth.Principal{UserID: "u-admin", Name: "Ada Admin", OrgID: "org-admin", OrgName: "AgriTrade", Orgs: []string{"org-admin"}, Roles: []string{auth.RoleAdmin}}
	// mPeer talks with owner in the fixture's conversation; not a caller.
	mPeer = auth.Principal{UserID: "u-peer", Name: "Pia Peer", OrgID: "org-p", OrgName: "P Buyers", Orgs: []string{"org-p"}}
)

// caller is one column of the matrix; p nil is the call without a token.
type caller struct {
	name string
	p    *auth.Principal
}

var matrixCallers = []caller{
	{"owner", &mOwner}, {"mate", &mMate}, {"other", &mOther}, {"carrier", &mCarrier},
	{"driver", &mDriver}, {"admin", &mAdmin}, {"none", nil},
}

// outcome is what a caller gets: a status, and whether the database must be
// as it was (every refusal, and 200s that refuse per row).
type outcome struct {
	status    int
	unchanged bool
}

var (
	ok        = outcome{status: 200}
	created   = outcome{status: 201}
	noContent = outcome{status: 204}
	refused   = outcome{status: 200, unchanged: true} // 200 whose rows were all refused
	forbidden = outcome{status: 403, unchanged: true}
	notFound  = outcome{status: 404, unchanged: true}
	invalid   = outcome{status: 400, unchanged: true} // a file reference the caller cannot read
	anonymous = outcome{status: 401, unchanged: true}
)

// row is one write route over one object: req builds the request for a caller
// on objects made for that call; want says what each caller gets (the
// caller "none" always gets 401 unless listed).
type row struct {
	name string
	req  func(t *testing.T, f *fixture, c caller) testkit.Request
	want map[string]outcome
	// check, when set, asserts more on a successful answer.
	check func(t *testing.T, f *fixture, c caller, r *testkit.Response)
}

// all gives every caller with a token the same outcome.
func all(o outcome) map[string]outcome {
	m := map[string]outcome{}
	for _, c := range matrixCallers {
		if c.p != nil {
			m[c.name] = o
		}
	}
	return m
}

// but returns m with some callers' outcomes replaced.
func but(m map[string]outcome, kv ...any) map[string]outcome {
	out := map[string]outcome{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1].(outcome)
	}
	return out
}

// TestAuthorizationMatrix drives every write route of the three modules with
// each kind of caller and asserts the contract's rules (API.md, "Object
// rules" and "Loads"): objects of others answer 404, never 403; a write for
// an organisation the caller is not a member of answers 403; a file reference
// the caller cannot read is a 400 naming it, like an unknown one; no token is
// 401; and a refusal leaves the database exactly as it was.
func TestAuthorizationMatrix(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		s := testkit.NewServer(t, bdb, func(p *app.Platform) []module.Module { return buildModules(p) })
		f := &fixture{s: s, db: bdb}
		for _, r := range matrixRows() {
			t.Run(r.name, func(t *testing.T) {
				for _, c := range matrixCallers {
					want, listed := r.want[c.name]
					if !listed {
						if c.p != nil {
							t.Fatalf("no outcome for %s", c.name)
						}
						want = anonymous
					}
					req := r.req(t, f, c)
					if c.p != nil {
						req.Token = s.Token(*c.p)
					}
					before := f.fingerprint(t)
					res := s.Do(req)
					if res.Status != want.status {
						t.Errorf("%s: %s %s answered %d, want %d: %s", c.name, req.Method, req.Path, res.Status, want.status, res.Body)
						continue
					}
					if code := errorCode(res.Status); code != "" {
						if got := res.Error(t).Code; got != code {
							t.Errorf("%s: code %q, want %q", c.name, got, code)
						}
					}
					if want.unchanged {
						if after := f.fingerprint(t); after != before {
							t.Errorf("%s: the database changed on a refusal (%d %s)", c.name, res.Status, res.Body)
						}
					} else if r.check != nil {
						r.check(t, f, c, res)
					}
				}
			})
		}
	})
}

func errorCode(status int) string {
	switch status {
	case 400:
		return "validation_failed"
	case 401:
		return "unauthorized"
	case 403:
		return "forbidden"
	case 404:
		return "not_found"
	}
	return ""
}

// fixture makes the objects of the matrix through the API, as their owners do.
type fixture struct {
	s  *testkit.Server
	db *bun.DB
	n  atomic.Int64
	// lastConversation and lastLoad are the objects the last request was built around.
	lastConversation, lastLoad string
}

func (f *fixture) seq(prefix string) string { return fmt.Sprintf("%s-%d", prefix, f.n.Add(1)) }

// do calls the API as p and decodes the answer, failing unless it is 200.
func (f *fixture) do(t *testing.T, p auth.Principal, method, path string, body, out any) {
	t.Helper()
	r := f.s.Do(testkit.Request{Method: method, Path: path, Token: f.s.Token(p), JSON: body})
	if r.Status != http.StatusOK {
		t.Fatalf("fixture %s %s as %s: %d %s", method, path, p.UserID, r.Status, r.Body)
	}
	if out != nil {
		r.Decode(t, out)
	}
}

var pngBytes = func() []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 2, 2))); err != nil {
		panic(err)
	}
	return b.Bytes()
}()

func multipartRequest(t *testing.T, path, filename string, content []byte, fields ...string) testkit.Request {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	fw, err := w.CreateFormFile("file", filename)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(content)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return testkit.Request{Method: http.MethodPost, Path: path, Body: bytes.NewReader(b.Bytes()), ContentType: w.FormDataContentType()}
}

// file uploads an image as owner for org-a and answers its id.
func (f *fixture) file(t *testing.T) string {
	t.Helper()
	req := multipartRequest(t, "/system/v1/files", "yard.png", pngBytes, "bucket", "images", "type", "image", "name", "yard.png", "organisationId", "org-a")
	req.Token = f.s.Token(mOwner)
	r := f.s.Do(req)
	if r.Status != http.StatusOK {
		t.Fatalf("upload: %d %s", r.Status, r.Body)
	}
	return r.Map(t)["id"].(string)
}

// uploadMeta is the Upload-Metadata of a tus upload of yard.png for org.
func uploadMeta(org string) string {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	return "bucket " + b64("images") + ",type " + b64("image") + ",name " + b64("yard.png") + ",organisationId " + b64(org)
}

// upload creates a resumable upload (tus) of pngBytes as owner for org-a,
// nothing sent yet, and answers its id.
func (f *fixture) upload(t *testing.T) string {
	t.Helper()
	req := tusRequest(http.MethodPost, "/system/v1/uploads", nil, "Upload-Length", strconv.Itoa(len(pngBytes)), "Upload-Metadata", uploadMeta("org-a"))
	req.Token = f.s.Token(mOwner)
	r := f.s.Do(req)
	if r.Status != http.StatusCreated {
		t.Fatalf("tus create: %d %s", r.Status, r.Body)
	}
	loc := r.Header.Get("Location")
	return loc[strings.LastIndex(loc, "/")+1:]
}

// tusRequest is a tus request (Tus-Resumable, headers kv, a chunk body).
func tusRequest(method, path string, chunk []byte, kv ...string) testkit.Request {
	h := map[string]string{"Tus-Resumable": "1.0.0"}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	r := testkit.Request{Method: method, Path: path, Header: h}
	if chunk != nil {
		r.Body, r.ContentType = bytes.NewReader(chunk), "application/offset+octet-stream"
	}
	return r
}

// load creates a load organised by org-a, sent to the carrier and to the
// driver (in transit), and answers its id.
func (f *fixture) load(t *testing.T) string {
	t.Helper()
	var l struct{ ID string }
	f.do(t, mOwner, http.MethodPost, "/logistics/v1/loads", loadForm(f.seq("A"), "org-a", nil), &l)
	f.do(t, mOwner, http.MethodPost, "/logistics/v1/loads/send-to-carrier", []any{map[string]any{"loadId": l.ID, "carrierId": mCarrier.OrgID, "carrierName": mCarrier.OrgName}}, nil)
	f.do(t, mCarrier, http.MethodPost, "/logistics/v1/loads/send-to-driver", []any{map[string]any{"loadId": l.ID, "driverId": mDriver.UserID, "driverName": mDriver.Name}}, nil)
	return l.ID
}

// carrierLoadFor records, as the carrier, a load naming organiser with a
// fresh reference, and answers the reference (f.lastLoad is the load).
func (f *fixture) carrierLoadFor(t *testing.T, organiser string) string {
	t.Helper()
	ref := f.seq("H")
	var l struct{ ID string }
	f.do(t, mCarrier, http.MethodPost, "/logistics/v1/loads/carrier", map[string]any{
		"carrierId": mCarrier.OrgID, "carrierName": mCarrier.OrgName, "organisationId": organiser, "organisationName": "Org " + organiser,
		"commodityId": 1, "reference": ref, "deliveryDateISO": "2026-12-01", "weight": 29, "tags": []string{}}, &l)
	f.lastLoad = l.ID
	return ref
}

// carrierLoadUnchanged checks f.lastLoad as stored: the carrier's, as created.
func (f *fixture) carrierLoadUnchanged(t *testing.T) {
	t.Helper()
	var got struct {
		Creator   string    `bun:"creator_org_id"`
		Commodity int       `bun:"commodity_id"`
		Weight    float64   `bun:"weight"`
		Created   time.Time `bun:"created_at"`
		Updated   time.Time `bun:"updated_at"`
	}
	if err := f.db.NewSelect().Table("logistics_loads").Column("creator_org_id", "commodity_id", "weight", "created_at", "updated_at").
		Where("id = ?", f.lastLoad).Scan(context.Background(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Creator != mCarrier.OrgID || got.Commodity != 1 || got.Weight != 29 || !got.Updated.Equal(got.Created) {
		t.Errorf("the carrier's load changed: %+v", got)
	}
}

func loadForm(reference, organiser string, files []any) map[string]any {
	return map[string]any{
		"organiserId": organiser, "organiserName": "Org " + organiser, "commodityId": 1, "reference": reference,
		"deliveryDateISO": "2026-12-01", "weight": 29, "weightNet": nil, "files": files, "tags": []string{},
	}
}

func proofForm(loadID string, files []any) map[string]any {
	return map[string]any{"loadId": loadID, "weightNet": 28.7, "ticketNumber": "WB-1", "vehicleRegistration": "AB12 CDE", "files": files}
}

// listing creates an (active or draft) sheep listing as p and answers its id.
func (f *fixture) listing(t *testing.T, p auth.Principal, draft bool, files []any) string {
	t.Helper()
	var out struct{ ID string }
	f.do(t, p, http.MethodPost, "/livestock/v1/listings/sheep", sheepListing(draft, files), &out)
	return out.ID
}

func sheepListing(draft bool, files []any) map[string]any {
	return map[string]any{
		"type": "selling", "isDraft": draft, "categoryIds": []int{1, 101, 150}, "files": files,
		"location": map[string]any{"address": map[string]any{"name": "Home Farm", "city": "Thirsk", "region": "North Yorkshire",
			"regionISO": "GB-NYK", "postcode": "YO7 1AA", "countryName": "United Kingdom", "countryISO": "GB"},
			"coordinates": map[string]any{"lat": 54.23, "lon": -1.34}},
		"price":       map[string]any{"type": "fixed", "pricePerUnit": map[string]any{"amount": 120, "currency": "GBP"}},
		"description": "Texel ewes", "tags": []string{},
		"properties": map[string]any{"breedType": "texel", "type": []string{"store"}, "sexes": "ewes"},
	}
}

// conversation starts owner's conversation with peer about a listing and
// answers the conversation and listing ids.
func (f *fixture) conversation(t *testing.T) (conv, listing string) {
	t.Helper()
	listing = f.listing(t, mOwner, false, nil)
	var c struct{ ConversationID string }
	f.do(t, mOwner, http.MethodPost, "/system/v1/conversations", map[string]any{"to": mPeer.UserID, "message": "hello", "listingId": listing, "listingType": "livestock"}, &c)
	return c.ConversationID, listing
}

func (f *fixture) messageCount(t *testing.T, conv string) int {
	t.Helper()
	var n int
	if err := f.db.NewSelect().Table("system_conversations").Column("message_count").Where("id = ?", conv).Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// fingerprintTables are the tables a write route may touch, with the columns
// compared: the outbox's delivery progress moves on its own (the dispatcher),
// so only which events exist counts there.
var fingerprintTables = []struct{ table, columns string }{
	{"platform_files", "*"}, {"platform_module_settings", "*"}, {"platform_outbox", "id, type, recipients"},
	{"system_conversations", "*"}, {"system_conversation_messages", "*"}, {"system_conversation_participants", "*"},
	{"system_expert_requests", "*"}, {"system_short_links", "*"}, {"refdata_varieties", "*"},
	{"logistics_loads", "*"}, {"livestock_listings", "*"}, {"livestock_reports", "*"}, {"livestock_wishlist", "*"},
	{"livestock_saved_searches", "*"}, {"livestock_saved_search_alerts", "*"}, {"platform_events", "id, type"},
	{"system_uploads", "*"}, {"system_upload_parts", "*"},
}

// fingerprint hashes the rows of every table a write may touch, once the
// background work a write starts has settled.
func (f *fixture) fingerprint(t *testing.T) string {
	t.Helper()
	f.settle(t)
	h := sha256.New()
	for _, ft := range fingerprintTables {
		var rows []map[string]any
		err := f.db.NewSelect().Table(ft.table).ColumnExpr(ft.columns).OrderExpr("1, 2").Scan(context.Background(), &rows)
		if err != nil {
			t.Fatalf("fingerprint %s: %v", ft.table, err)
		}
		b, err := json.Marshal(rows)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s:%s\n", ft.table, b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// settle waits until the listings queued for saved-search matching have
// been matched: the alerts runner writes their alerts, notifications and
// events after the create has answered.
func (f *fixture) settle(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n, err := f.db.NewSelect().TableExpr("livestock_alert_queue").Count(context.Background())
		if err != nil {
			t.Fatalf("alert queue: %v", err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d listings still wait for saved-search matching after 15 s", n)
		}
	}
}

func jsonReq(method, path string, body any) testkit.Request {
	return testkit.Request{Method: method, Path: path, JSON: body}
}

func fileRefs(ids ...string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = map[string]any{"id": id}
	}
	return out
}

// ownOrg is the organisation a caller acts for (org-a for callers without a token).
func ownOrg(c caller) string {
	if c.p == nil {
		return "org-a"
	}
	return c.p.OrgID
}

func matrixRows() []row {
	partiesOfLoad := func(owner, carrier, driver outcome) map[string]outcome {
		return map[string]outcome{"owner": owner, "mate": owner, "carrier": carrier, "driver": driver, "other": notFound, "admin": notFound}
	}
	onlyOrgA := but(all(forbidden), "owner", ok, "mate", ok)
	adminOnly := but(all(forbidden), "admin", ok)
	var rows []row

	// System: files.
	rows = append(rows,
		row{name: "files/upload for org-a", want: onlyOrgA, req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return multipartRequest(t, "/system/v1/files", "x.png", pngBytes, "bucket", "images", "type", "image", "name", "x.png", "organisationId", "org-a")
		}},
		// Sharing a file with another organisation grants its members read
		// access to the caller's file; it creates nothing for that organisation.
		row{name: "files/upload for own org shared with org-a", want: all(ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return multipartRequest(t, "/system/v1/files", "x.png", pngBytes, "bucket", "images", "type", "image", "name", "x.png", "organisations", "org-a")
		}},
		row{name: "files/archive", want: but(all(notFound), "owner", ok, "admin", ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodDelete, "/system/v1/files/"+f.file(t), nil)
		}},
		// Resumable uploads (tus): creation checks the organisation as the
		// form does; an upload is its creator's alone (others, admins too, 404).
		row{name: "uploads/create for org-a", want: but(all(forbidden), "owner", created, "mate", created), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return tusRequest(http.MethodPost, "/system/v1/uploads", nil, "Upload-Length", "100", "Upload-Metadata", uploadMeta("org-a"))
		}},
		row{name: "uploads/patch", want: but(all(notFound), "owner", noContent), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return tusRequest(http.MethodPatch, "/system/v1/uploads/"+f.upload(t), pngBytes, "Upload-Offset", "0")
		}},
		row{name: "uploads/terminate", want: but(all(notFound), "owner", noContent), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return tusRequest(http.MethodDelete, "/system/v1/uploads/"+f.upload(t), nil)
		}},
	)

	// System: conversations.
	rows = append(rows,
		row{name: "conversations/add message", want: but(all(notFound), "owner", ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			conv, _ := f.conversation(t)
			return jsonReq(http.MethodPost, "/system/v1/conversations/"+conv+"/messages", map[string]any{"to": mPeer.UserID, "message": "more"})
		}},
		row{name: "conversations/create with conversationId", want: but(all(notFound), "owner", ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			conv, _ := f.conversation(t)
			return jsonReq(http.MethodPost, "/system/v1/conversations", map[string]any{"to": mPeer.UserID, "message": "more", "conversationId": conv})
		}},
		// A listingId leads to the caller's own conversation with the recipient
		// about that listing, never into someone else's.
		row{name: "conversations/create about another's listing", want: all(ok),
			req: func(t *testing.T, f *fixture, c caller) testkit.Request {
				conv, listing := f.conversation(t)
				f.lastConversation = conv
				to := mOwner.UserID
				if c.p != nil && c.p.UserID == mOwner.UserID {
					to = mPeer.UserID
				}
				return jsonReq(http.MethodPost, "/system/v1/conversations", map[string]any{"to": to, "message": "is it still for sale?", "listingId": listing, "listingType": "livestock"})
			},
			check: func(t *testing.T, f *fixture, c caller, r *testkit.Response) {
				got := r.Map(t)["conversationId"]
				if mine := c.p.UserID == mOwner.UserID; mine != (got == f.lastConversation) {
					t.Errorf("%s: answered conversation %v (the fixture's is %s)", c.name, got, f.lastConversation)
				}
				if n := f.messageCount(t, f.lastConversation); c.p.UserID != mOwner.UserID && n != 1 {
					t.Errorf("%s: the fixture's conversation has %d messages, want 1", c.name, n)
				}
			}},
	)

	// System: experts (files of others), admin routes, short links.
	rows = append(rows,
		row{name: "experts/question with org-a's file", want: but(all(invalid), "owner", ok, "mate", ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPost, "/system/v1/experts/questions", map[string]any{"question": "What is this weed?", "files": fileRefs(f.file(t))})
		}},
		row{name: "experts/grain sample with org-a's file", want: but(all(invalid), "owner", ok, "mate", ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPost, "/system/v1/experts/grain-samples", map[string]any{"files": fileRefs(f.file(t))})
		}},
		row{name: "admin/cache clear", want: adminOnly, req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPost, "/system/v1/cache", map[string]any{"prefixes": []string{"refdata:"}})
		}},
		row{name: "admin/variety import", want: adminOnly, req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return multipartRequest(t, "/system/v1/commodities/varieties/import", "v.csv", []byte("commodityId,type,grade,variety\n1,Milling,Group 1,"+f.seq("Matrix")+"\n"))
		}},
		row{name: "short links/create (public)", want: all(ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPost, "/system/v1/short-urls", map[string]any{"url": "http://api.test/" + f.seq("page"), "template": "default"})
		}},
	)
	for _, m := range []string{"system", "logistics", "livestock"} {
		rows = append(rows, row{name: "admin/" + m + " settings", want: adminOnly, req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPut, "/"+m+"/v1/admin/settings", map[string]any{"logging": map[string]any{"level": "debug"}})
		}})
	}
	// Every "none" outcome is 401 except on the public route.
	for i := range rows {
		if strings.HasPrefix(rows[i].name, "short links/") {
			rows[i].want = but(rows[i].want, "none", ok)
		}
	}

	// Logistics.
	rows = append(rows,
		row{name: "loads/create, organiser form for org-a", want: onlyOrgA, req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPost, "/logistics/v1/loads", loadForm(f.seq("M"), "org-a", nil))
		}},
		row{name: "loads/create, carrier form as org-haul for org-a", want: but(all(forbidden), "carrier", ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPost, "/logistics/v1/loads/carrier", map[string]any{
				"carrierId": "org-haul", "carrierName": "Haul Ltd", "organisationId": "org-a", "organisationName": "A Farms",
				"commodityId": 1, "reference": f.seq("C"), "deliveryDateISO": "2026-12-01", "weight": 29, "tags": []string{}})
		}},
		// The hole of issue 11: a carrier's load naming org-a with org-a's
		// reference neither blocks org-a's create of it nor is reached by
		// org-a's batch rows.
		row{name: "loads/create org-a's reference a carrier used for org-a", want: onlyOrgA,
			req: func(t *testing.T, f *fixture, c caller) testkit.Request {
				ref := f.carrierLoadFor(t, "org-a")
				return jsonReq(http.MethodPost, "/logistics/v1/loads", loadForm(ref, "org-a", nil))
			},
			check: func(t *testing.T, f *fixture, c caller, r *testkit.Response) {
				if id := r.Map(t)["id"]; id == f.lastLoad {
					t.Errorf("%s: the create answered the carrier's load", c.name)
				}
				f.carrierLoadUnchanged(t)
			}},
		row{name: "loads/batch row with org-a's reference a carrier used for org-a", want: but(all(refused), "owner", ok, "mate", ok),
			req: func(t *testing.T, f *fixture, c caller) testkit.Request {
				ref := f.carrierLoadFor(t, "org-a")
				return multipartRequest(t, "/logistics/v1/loads/batch", "loads.csv", []byte("organiserId,organiserName,commodityId,reference,deliveryDateISO,weight\norg-a,A Farms,2,"+ref+",2027-01-05,3\n"))
			},
			check: func(t *testing.T, f *fixture, c caller, r *testkit.Response) {
				if !strings.Contains(string(r.Body), `"summary":"load `) || !strings.Contains(string(r.Body), ` created"`) {
					t.Errorf("%s: the row did not create org-a's own load: %s", c.name, r.Body)
				}
				f.carrierLoadUnchanged(t)
			}},
		row{name: "loads/create for own org with org-a's file", want: but(all(invalid), "owner", ok, "mate", ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPost, "/logistics/v1/loads", loadForm(f.seq("F"), ownOrg(c), fileRefs(f.file(t))))
		}},
		row{name: "loads/send to driver", want: partiesOfLoad(ok, ok, forbidden), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPost, "/logistics/v1/loads/send-to-driver", []any{map[string]any{"loadId": f.load(t), "driverId": "u-driver-2"}})
		}},
		row{name: "loads/send to carrier", want: partiesOfLoad(ok, forbidden, forbidden), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPost, "/logistics/v1/loads/send-to-carrier", []any{map[string]any{"loadId": f.load(t), "carrierId": "org-haul-2"}})
		}},
		row{name: "loads/proof of delivery, list", want: partiesOfLoad(ok, ok, ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPost, "/logistics/v1/loads/proof-of-delivery", []any{proofForm(f.load(t), nil)})
		}},
		row{name: "loads/proof of delivery, by id", want: partiesOfLoad(ok, ok, ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			id := f.load(t)
			return jsonReq(http.MethodPost, "/logistics/v1/loads/"+id+"/proof-of-delivery", proofForm(id, nil))
		}},
		// Files are checked before the load: whoever cannot read the file gets
		// the same 400 whether or not it may see the load.
		row{name: "loads/proof of delivery with org-a's file", want: but(all(invalid), "owner", ok, "mate", ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			id := f.load(t)
			return jsonReq(http.MethodPost, "/logistics/v1/loads/"+id+"/proof-of-delivery", proofForm(id, fileRefs(f.file(t))))
		}},
		row{name: "loads/batch for org-a", want: onlyOrgA, req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return multipartRequest(t, "/logistics/v1/loads/batch", "loads.csv", []byte("commodityId,reference,deliveryDateISO\n1,"+f.seq("B")+",2026-12-01\n"), "organisationId", "org-a", "organisationName", "A Farms")
		}},
		row{name: "loads/batch rows naming org-a", want: but(all(refused), "owner", ok, "mate", ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return multipartRequest(t, "/logistics/v1/loads/batch", "loads.csv", []byte("organiserId,organiserName,commodityId,reference,deliveryDateISO\norg-a,A Farms,1,"+f.seq("R")+",2026-12-01\n"))
		}},
	)

	// Livestock.
	ownerOrg := func(o outcome) map[string]outcome { return but(all(notFound), "owner", o, "mate", o) }
	rows = append(rows,
		row{name: "listings/create for own org", want: all(ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPost, "/livestock/v1/listings/sheep", sheepListing(false, nil))
		}},
		row{name: "listings/create with org-a's file", want: but(all(invalid), "owner", ok, "mate", ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPost, "/livestock/v1/listings/sheep", sheepListing(false, fileRefs(f.file(t))))
		}},
		row{name: "listings/edit active", want: ownerOrg(ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPatch, "/livestock/v1/listings/"+f.listing(t, mOwner, false, nil), map[string]any{"description": "changed"})
		}},
		row{name: "listings/publish draft", want: ownerOrg(ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPatch, "/livestock/v1/listings/"+f.listing(t, mOwner, true, nil), map[string]any{"isDraft": false})
		}},
		row{name: "listings/edit own with org-a's file", want: but(all(invalid), "owner", ok, "mate", ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			who := mOwner
			if c.p != nil {
				who = *c.p
			}
			return jsonReq(http.MethodPatch, "/livestock/v1/listings/"+f.listing(t, who, false, nil), map[string]any{"files": fileRefs(f.file(t))})
		}},
		row{name: "listings/close", want: ownerOrg(ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPost, "/livestock/v1/listings/"+f.listing(t, mOwner, false, nil)+"/close", map[string]any{"status": "sold"})
		}},
		row{name: "listings/report active", want: but(all(ok), "owner", notFound, "mate", notFound), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPost, "/livestock/v1/listings/"+f.listing(t, mOwner, false, nil)+"/report", map[string]any{"reason": "suspicious", "message": nil})
		}},
		row{name: "listings/report draft", want: all(notFound), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPost, "/livestock/v1/listings/"+f.listing(t, mOwner, true, nil)+"/report", map[string]any{"reason": "suspicious", "message": nil})
		}},
		row{name: "listings/wishlist active", want: all(ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPut, "/livestock/v1/listings/"+f.listing(t, mOwner, false, nil)+"/wishlist", nil)
		}},
		row{name: "listings/wishlist draft", want: ownerOrg(ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPut, "/livestock/v1/listings/"+f.listing(t, mOwner, true, nil)+"/wishlist", nil)
		}},
		row{name: "saved-searches/create", want: all(ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			return jsonReq(http.MethodPost, "/livestock/v1/saved-searches", map[string]any{"name": "Sheep", "query": map[string]any{"f:commodityType": "sheep"}})
		}},
		row{name: "saved-searches/delete owner's", want: but(all(notFound), "owner", ok), req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			var out struct{ ID string }
			f.do(t, mOwner, http.MethodPost, "/livestock/v1/saved-searches", map[string]any{"name": "Cattle", "query": map[string]any{"f:commodityType": "cattle"}}, &out)
			return jsonReq(http.MethodDelete, "/livestock/v1/saved-searches/"+out.ID, nil)
		}},
		row{name: "listings/admin review", want: adminOnly, req: func(t *testing.T, f *fixture, c caller) testkit.Request {
			id := f.listing(t, mOwner, false, nil)
			f.do(t, mPeer, http.MethodPost, "/livestock/v1/listings/"+id+"/report", map[string]any{"reason": "misleading", "message": nil}, nil)
			return jsonReq(http.MethodPost, "/livestock/v1/admin/listings/"+id+"/review", map[string]any{"decision": "clear"})
		}},
	)
	return rows
}
