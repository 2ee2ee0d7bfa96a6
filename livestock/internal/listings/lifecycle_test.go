package listings_test

import (
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

func TestVisibilityEditAndClose(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		own, other, hand := s.Token(farmer), s.Token(outsider), s.Token(farmHand)
		draft := create(t, s, farmer, "sheep", with(validBody("sheep"), "isDraft", true))
		photo := upload(t, s, farmer, "ewes.txt")
		selling := create(t, s, farmer, "cattle", validBody("cattle"))
		buying := create(t, s, farmer, "feed", with(validBody("feed"), "type", "buying"))
		cancel := create(t, s, farmer, "bedding", validBody("bedding"))
		path := func(id string, suffix string) string { return "/livestock/v1/listings/" + id + suffix }
		closeReq := func(tok, id, status string) testkit.Request {
			return testkit.Request{Method: http.MethodPost, Path: path(id, "/close"), Token: tok, JSON: map[string]any{"status": status}}
		}
		statusIs := func(want string) func(t *testing.T, r *testkit.Response) {
			return func(t *testing.T, r *testkit.Response) {
				if got := r.Map(t)["status"]; got != want {
					t.Fatalf("status %v, want %s", got, want)
				}
			}
		}
		s.Run(t, []testkit.Scenario{
			{Name: "draftOwner200", Req: testkit.Request{Method: http.MethodGet, Path: path(draft, ""), Token: own}, Status: 200, Check: statusIs("draft")},
			{Name: "draftMemberThroughOrgs200", Req: testkit.Request{Method: http.MethodGet, Path: path(draft, ""), Token: hand}, Status: 200},
			{Name: "draftOther404", Req: testkit.Request{Method: http.MethodGet, Path: path(draft, ""), Token: other}, Status: 404, Code: "not_found"},
			{Name: "unknown404", Req: testkit.Request{Method: http.MethodGet, Path: path("019a0000-0000-7000-8000-000000000000", ""), Token: own}, Status: 404, Code: "not_found"},
			{Name: "get401", Req: testkit.Request{Method: http.MethodGet, Path: path(selling, "")}, Status: 401, Code: unauthorised},
			{Name: "activeOther200", Req: testkit.Request{Method: http.MethodGet, Path: path(selling, ""), Token: other}, Status: 200, Check: statusIs("active")},
			// Edits.
			{Name: "patchOther404", Req: testkit.Request{Method: http.MethodPatch, Path: path(draft, ""), Token: other, JSON: map[string]any{"description": "mine now"}}, Status: 404, Code: "not_found"},
			{Name: "patchActiveOther404", Req: testkit.Request{Method: http.MethodPatch, Path: path(selling, ""), Token: other, JSON: map[string]any{"description": "mine now"}}, Status: 404, Code: "not_found"},
			{Name: "patchEmpty400", Req: testkit.Request{Method: http.MethodPatch, Path: path(draft, ""), Token: own, JSON: map[string]any{"type": "buying"}}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "", "type") }},
			{Name: "patchUnknownField400", Req: testkit.Request{Method: http.MethodPatch, Path: path(draft, ""), Token: own, JSON: map[string]any{"descr": "new", "isDraft": true}}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					wantPaths(t, r, "descr")
					if c := r.Error(t).Validation[0].Code; c != "unknown_field" {
						t.Errorf("code %s, want unknown_field", c)
					}
				}},
			{Name: "patchInvalid400", Req: testkit.Request{Method: http.MethodPatch, Path: path(draft, ""), Token: own, JSON: map[string]any{
				"description": "", "price": map[string]any{"type": "fixed"}, "tags": "x", "categoryIds": []int{2}, "files": []any{map[string]any{"id": "nope"}},
				"location": map[string]any{"coordinates": map[string]any{"lat": 0, "lon": 200}}, "properties": map[string]any{"breedType": "hereford"}, "isDraft": 1}},
				Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) {
					wantPaths(t, r, "description", "price.pricePerUnit", "tags", "categoryIds[0]", "files[0].id", "location.coordinates.lon",
						"properties.breedType", "properties.sexes", "isDraft")
				}},
			{Name: "patchFeedProperties400", Req: testkit.Request{Method: http.MethodPatch, Path: path(buying, ""), Token: own, JSON: map[string]any{"properties": map[string]any{"sexes": "ewes"}}}, Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "properties") }},
			{Name: "patchDraft200", Req: testkit.Request{Method: http.MethodPatch, Path: path(draft, ""), Token: hand, JSON: map[string]any{
				"description": "Twenty Texel ewes", "tags": []string{"ewes"}, "location": nil, "categoryIds": []int{1, 101},
				"files":      []map[string]any{{"id": photo.ID}},
				"properties": map[string]any{"breedType": "texel", "sexes": "ewes", "additionalInfo": []string{"in-lamb"}}}}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var l listing
					r.Decode(t, &l)
					if l.Status != "draft" || l.Description != "Twenty Texel ewes" || string(l.Location) != "null" || len(l.CategoryIDs) != 2 ||
						len(l.Files) != 1 || l.Files[0].ID != photo.ID || l.Files[0].Name != "ewes.txt" ||
						!jsonEqual(t, l.Properties, []byte(`{"breedType":"texel","sexes":"ewes","additionalInfo":["in-lamb"],"type":[]}`)) {
						t.Fatalf("patched %s", r.Body)
					}
				}},
			{Name: "publishedStillHiddenFromSearchAsDraft", Req: testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/listings", Token: own}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var ls []listing
					r.Decode(t, &ls)
					if slices.Contains(ids(ls), draft) {
						t.Fatal("a draft shows in search")
					}
				}},
			{Name: "publish200", Req: testkit.Request{Method: http.MethodPatch, Path: path(draft, ""), Token: own, JSON: map[string]any{"isDraft": false}}, Status: 200, Check: statusIs("active")},
			{Name: "publishedOther200", Req: testkit.Request{Method: http.MethodGet, Path: path(draft, ""), Token: other}, Status: 200},
			{Name: "publishedSearchable200", Req: testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/listings?f:commodityAdditionalInfo=in-lamb", Token: other}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var ls []listing
					r.Decode(t, &ls)
					if len(ls) != 1 || ls[0].ID != draft {
						t.Fatalf("in-lamb search %v", ids(ls))
					}
				}},
			{Name: "backToDraft409", Req: testkit.Request{Method: http.MethodPatch, Path: path(draft, ""), Token: own, JSON: map[string]any{"isDraft": true}}, Status: 409, Code: "conflict"},
			// Closing.
			{Name: "closeDraft409", Req: closeReq(own, create(t, s, farmer, "feed", with(validBody("feed"), "isDraft", true)), "sold"), Status: 409, Code: "conflict"},
			{Name: "closeOther404", Req: closeReq(other, selling, "sold"), Status: 404, Code: "not_found"},
			{Name: "closeBadStatus400", Req: closeReq(own, selling, "gone"), Status: 400, Code: "validation_failed"},
			{Name: "closeSellingFound409", Req: closeReq(own, selling, "found"), Status: 409, Code: "conflict"},
			{Name: "closeBuyingSold409", Req: closeReq(own, buying, "sold"), Status: 409, Code: "conflict"},
			{Name: "closeSelling200", Req: closeReq(own, selling, "sold"), Status: 200},
			{Name: "closeAgain409", Req: closeReq(own, selling, "cancelled"), Status: 409, Code: "conflict"},
			{Name: "closeBuying200", Req: closeReq(hand, buying, "found"), Status: 200},
			{Name: "closeCancel200", Req: closeReq(own, cancel, "cancelled"), Status: 200},
			{Name: "soldOwner200", Req: testkit.Request{Method: http.MethodGet, Path: path(selling, ""), Token: own}, Status: 200, Check: statusIs("sold")},
			{Name: "soldOther404", Req: testkit.Request{Method: http.MethodGet, Path: path(selling, ""), Token: other}, Status: 404, Code: "not_found"},
			{Name: "foundOwner200", Req: testkit.Request{Method: http.MethodGet, Path: path(buying, ""), Token: own}, Status: 200, Check: statusIs("found")},
			{Name: "cancelledOwner200", Req: testkit.Request{Method: http.MethodGet, Path: path(cancel, ""), Token: own}, Status: 200, Check: statusIs("cancelled")},
			{Name: "patchClosed409", Req: testkit.Request{Method: http.MethodPatch, Path: path(selling, ""), Token: own, JSON: map[string]any{"description": "again"}}, Status: 409, Code: "conflict"},
			{Name: "close401", Req: testkit.Request{Method: http.MethodPost, Path: path(selling, "/close"), JSON: map[string]any{"status": "sold"}}, Status: 401, Code: unauthorised},
		})
		// Closed listings: the owner's organisation finds them under their status, nobody else does.
		for _, c := range []struct {
			status string
			id     string
		}{{"sold", selling}, {"found", buying}} {
			q := url.Values{"f:status": {c.status}}
			if got, total := search(t, s, farmer, q); total != 1 || len(got) != 1 || got[0].ID != c.id {
				t.Fatalf("owner's %s search: %v (total %d)", c.status, ids(got), total)
			}
			if got, total := search(t, s, outsider, q); total != 0 || len(got) != 0 {
				t.Fatalf("outsider's %s search: %v", c.status, ids(got))
			}
		}
		if got, _ := search(t, s, outsider, url.Values{}); len(got) != 1 || got[0].ID != draft {
			t.Fatalf("active listings %v, want only the published draft", ids(got))
		}
	})
}

func TestReportsAndModeration(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		id := create(t, s, farmer, "sheep", validBody("sheep"))
		keep := create(t, s, farmer, "sheep", validBody("sheep"))
		draft := create(t, s, farmer, "sheep", with(validBody("sheep"), "isDraft", true))
		report := func(p string, tok string, body any) testkit.Request {
			return testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/listings/" + p + "/report", Token: tok, JSON: body}
		}
		reason := map[string]any{"reason": "misleading", "message": "The photos are of another flock"}
		inSearch := func(t *testing.T) bool {
			got, _ := search(t, s, trader, url.Values{})
			return slices.Contains(ids(got), id)
		}
		s.Run(t, []testkit.Scenario{
			{Name: "invalid400", Req: report(id, s.Token(outsider), map[string]any{"reason": "ugly"}), Status: 400, Code: "validation_failed",
				Check: func(t *testing.T, r *testkit.Response) { wantPaths(t, r, "reason", "message") }},
			{Name: "owner404", Req: report(id, s.Token(farmHand), reason), Status: 404, Code: "not_found"},
			{Name: "draft404", Req: report(draft, s.Token(outsider), reason), Status: 404, Code: "not_found"},
			{Name: "unknown404", Req: report("nope", s.Token(outsider), reason), Status: 404, Code: "not_found"},
			{Name: "first200", Req: report(id, s.Token(outsider), reason), Status: 200},
			{Name: "repeat409", Req: report(id, s.Token(outsider), map[string]any{"reason": "other", "message": nil}), Status: 409, Code: "conflict"},
			{Name: "second200", Req: report(id, s.Token(trader), map[string]any{"reason": "suspicious", "message": nil}), Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					if !inSearch(t) {
						t.Fatal("hidden after two reports")
					}
				}},
			{Name: "third200", Req: report(id, s.Token(dealer), map[string]any{"reason": "other", "message": "Price too good"}), Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					if inSearch(t) {
						t.Fatal("still in search after three distinct reporters")
					}
					if status, _ := get(t, s, trader, id); status != http.StatusOK {
						t.Fatalf("get of a hidden listing: %d", status)
					}
				}},
			{Name: "reportsFarmer403", Req: testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/admin/reports", Token: s.Token(farmer)}, Status: 403, Code: "forbidden"},
			{Name: "reportsAdmin200", Req: testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/admin/reports?listingId=" + id, Token: s.Token(admin)}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var rs []map[string]any
					r.Decode(t, &rs)
					if len(rs) != 3 || r.Header.Get("X-Total-Count") != "3" || rs[0]["userId"] != outsider.UserID || rs[0]["reviewedAtUTC"] != nil {
						t.Fatalf("reports %v", rs)
					}
				}},
			{Name: "reviewFarmer403", Req: testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/admin/listings/" + id + "/review", Token: s.Token(farmer), JSON: map[string]any{"decision": "clear"}}, Status: 403, Code: "forbidden"},
			{Name: "reviewInvalid400", Req: testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/admin/listings/" + id + "/review", Token: s.Token(admin), JSON: map[string]any{"decision": "ban"}}, Status: 400, Code: "validation_failed"},
			{Name: "reviewUnknown404", Req: testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/admin/listings/nope/review", Token: s.Token(admin), JSON: map[string]any{"decision": "clear"}}, Status: 404, Code: "not_found"},
			{Name: "reviewNoReports409", Req: testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/admin/listings/" + keep + "/review", Token: s.Token(admin), JSON: map[string]any{"decision": "clear"}}, Status: 409, Code: "conflict"},
			{Name: "clear200", Req: testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/admin/listings/" + id + "/review", Token: s.Token(admin), JSON: map[string]any{"decision": "clear"}}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					if !inSearch(t) {
						t.Fatal("not back in search after clearing")
					}
				}},
			{Name: "openAfterClear200", Req: testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/admin/reports", Token: s.Token(admin)}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					if r.Header.Get("X-Total-Count") != "0" {
						t.Fatalf("open reports after review: %s", r.Body)
					}
				}},
			{Name: "reviewedList200", Req: testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/admin/reports?status=reviewed&sortDesc=true", Token: s.Token(admin)}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var rs []map[string]any
					r.Decode(t, &rs)
					if len(rs) != 3 || rs[0]["decision"] != "clear" || rs[0]["reviewedBy"] != admin.UserID || rs[0]["userId"] != dealer.UserID {
						t.Fatalf("reviewed reports %v", rs)
					}
				}},
			{Name: "againAfterReview409", Req: report(id, s.Token(trader), reason), Status: 409, Code: "conflict"},
			// Another listing reported three times and removed.
			{Name: "k1", Req: report(keep, s.Token(outsider), reason), Status: 200},
			{Name: "k2", Req: report(keep, s.Token(trader), reason), Status: 200},
			{Name: "k3", Req: report(keep, s.Token(dealer), reason), Status: 200},
			{Name: "remove200", Req: testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/admin/listings/" + keep + "/review", Token: s.Token(admin), JSON: map[string]any{"decision": "remove"}}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					status, l := get(t, s, farmer, keep)
					if status != http.StatusOK || l.Status != "cancelled" {
						t.Fatalf("removed listing: %d %s", status, l.Status)
					}
					if status, _ := get(t, s, trader, keep); status != http.StatusNotFound {
						t.Fatalf("removed listing visible to others: %d", status)
					}
				}},
		})
	})
}

func TestWishlist(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		a := create(t, s, farmer, "cattle", validBody("cattle"))
		b := create(t, s, farmer, "sheep", validBody("sheep"))
		draft := create(t, s, farmer, "sheep", with(validBody("sheep"), "isDraft", true))
		tok := s.Token(outsider)
		wish := func(method, id string) testkit.Request {
			return testkit.Request{Method: method, Path: "/livestock/v1/listings/" + id + "/wishlist", Token: tok}
		}
		s.Run(t, []testkit.Scenario{
			{Name: "put200", Req: wish(http.MethodPut, a), Status: 200},
			{Name: "putAgain200", Req: wish(http.MethodPut, a), Status: 200},
			{Name: "putDraft404", Req: wish(http.MethodPut, draft), Status: 404, Code: "not_found"},
			{Name: "putUnknown404", Req: wish(http.MethodPut, "nope"), Status: 404, Code: "not_found"},
			{Name: "deleteNotOn200", Req: wish(http.MethodDelete, b), Status: 200},
			{Name: "deleteDraft404", Req: wish(http.MethodDelete, draft), Status: 404, Code: "not_found"},
			{Name: "deleteUnknown404", Req: wish(http.MethodDelete, "nope"), Status: 404, Code: "not_found"},
			{Name: "put401", Req: testkit.Request{Method: http.MethodPut, Path: "/livestock/v1/listings/" + a + "/wishlist"}, Status: 401, Code: unauthorised},
		})
		got, total := search(t, s, outsider, url.Values{"isWishlisted": {"true"}})
		if total != 1 || len(got) != 1 || got[0].ID != a || !got[0].IsWishlisted {
			t.Fatalf("wishlist search %v total %d", got, total)
		}
		if _, total := search(t, s, outsider, url.Values{"isWishlisted": {"false"}}); total != 2 {
			t.Fatalf("isWishlisted=false should not filter: total %d", total)
		}
		if _, l := get(t, s, outsider, a); !l.IsWishlisted {
			t.Fatal("isWishlisted false on a wishlisted listing")
		}
		if _, l := get(t, s, farmer, a); l.IsWishlisted {
			t.Fatal("another user's wishlist leaks into isWishlisted")
		}
		if _, total := search(t, s, trader, url.Values{"isWishlisted": {"true"}}); total != 0 {
			t.Fatalf("trader's wishlist has %d listings", total)
		}
		// Once closed, the listing can still be taken off the wishlist, not put on it.
		s.Run(t, []testkit.Scenario{
			{Name: "close200", Req: testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/listings/" + a + "/close", Token: s.Token(farmer), JSON: map[string]any{"status": "sold"}}, Status: 200},
			{Name: "putClosed404", Req: wish(http.MethodPut, a), Status: 404, Code: "not_found"},
			{Name: "deleteClosed200", Req: wish(http.MethodDelete, a), Status: 200},
			{Name: "deleteClosedAgain404", Req: wish(http.MethodDelete, a), Status: 404, Code: "not_found"},
		})
	})
}

// TestConcurrentReports: three reporters at once still hide the listing (each
// report locks the listing row, so the third sees the other two).
func TestConcurrentReports(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		for round := 0; round < 3; round++ {
			id := create(t, s, farmer, "cattle", validBody("cattle"))
			var wg sync.WaitGroup
			statuses := make([]int, 3)
			for i, p := range []auth.Principal{outsider, trader, dealer} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := s.Do(testkit.Request{Method: http.MethodPost, Path: "/livestock/v1/listings/" + id + "/report", Token: s.Token(p),
						JSON: map[string]any{"reason": "suspicious", "message": nil}})
					statuses[i] = r.Status
				}()
			}
			wg.Wait()
			if statuses[0] != 200 || statuses[1] != 200 || statuses[2] != 200 {
				t.Fatalf("statuses %v", statuses)
			}
			if got, _ := search(t, s, outsider, url.Values{}); slices.Contains(ids(got), id) {
				t.Fatalf("round %d: the listing is still in search after three concurrent reports", round)
			}
		}
	})
}
