package listings_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

var kinds = []string{"sheep", "cattle", "working-dog", "feed", "bedding"}

func TestCreateEveryKind(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		file := upload(t, s, farmer, "health-plan.txt")
		for _, kind := range kinds {
			t.Run(kind, func(t *testing.T) {
				// A reference may carry the documented shape whole (as answered).
				body := with(validBody(kind), "files", []map[string]any{{"id": file.ID, "name": file.Name, "url": file.URL,
					"userId": file.UserID, "userName": file.UserName, "organisationId": file.OrganisationID, "createdAtUTC": file.CreatedAtUTC}})
				id := create(t, s, farmer, kind, body)
				status, l := get(t, s, farmer, id)
				if status != http.StatusOK {
					t.Fatalf("get: %d", status)
				}
				if l.Kind != kind || l.Type != "selling" || l.Status != "active" || l.OrganisationID != farmer.OrgID ||
					l.OrganisationName != farmer.OrgName || l.UserID != farmer.UserID || l.Description != "Good sort, well grown" {
					t.Fatalf("listing %+v", l)
				}
				if len(l.Files) != 1 || l.Files[0].ID != file.ID || l.Files[0].Name != "health-plan.txt" || l.Files[0].URL == "" || l.Files[0].UserID != farmer.UserID {
					t.Fatalf("files %+v, want the canonical reference of %s", l.Files, file.ID)
				}
				wantCats, _ := json.Marshal(body["categoryIds"])
				gotCats, _ := json.Marshal(l.CategoryIDs)
				if string(gotCats) != string(wantCats) {
					t.Fatalf("categoryIds %s, want %s", gotCats, wantCats)
				}
				// The properties come back as sent (feed and bedding: null).
				want, _ := json.Marshal(body["properties"])
				if !jsonEqual(t, l.Properties, want) {
					t.Fatalf("properties\n got %s\nwant %s", l.Properties, want)
				}
				if !jsonEqual(t, l.Location, mustJSON(body["location"])) {
					t.Fatalf("location %s", l.Location)
				}
				if !jsonEqual(t, l.Price, mustJSON(body["price"])) {
					t.Fatalf("price %s", l.Price)
				}
			})
		}
		t.Run("draftNullLocationNoFiles", func(t *testing.T) {
			id := create(t, s, farmer, "feed", with(validBody("feed"), "isDraft", true, "location", nil, "files", []any{}, "tags", []string{}))
			_, l := get(t, s, farmer, id)
			if l.Status != "draft" || string(l.Location) != "null" || len(l.Files) != 0 || l.Tags == nil {
				t.Fatalf("draft %+v", l)
			}
		})
		t.Run("normalised", func(t *testing.T) {
			body := validBody("sheep")
			body["type"] = " Buying "
			body["properties"] = map[string]any{"breedType": "Scottish-Blackface", "sexes": "EWES", "type": []string{"Breeding", "breeding"}}
			body["price"] = map[string]any{"type": "negotiable", "pricePerUnit": map[string]any{"amount": 95.5, "currency": "eur"},
				"minPrice": map[string]any{"amount": 80, "currency": "EUR"}, "maxPrice": map[string]any{"amount": 110, "currency": "EUR"}}
			id := create(t, s, farmer, "sheep", body)
			_, l := get(t, s, farmer, id)
			want := `{"breedType":"scottish-blackface","type":["breeding"],"additionalInfo":[],"sexes":"ewes"}`
			if l.Type != "buying" || !jsonEqual(t, l.Properties, []byte(want)) {
				t.Fatalf("type %s properties %s, want %s", l.Type, l.Properties, want)
			}
			if !strings.Contains(string(l.Price), `"currency":"EUR"`) {
				t.Fatalf("price %s", l.Price)
			}
		})
	})
}

func TestCreateValidation(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		tok := s.Token(farmer)
		post := func(kind string, body any) *testkit.Response {
			return s.Do(testkit.Request{Method: http.MethodPost, Path: createPath[kind], Token: tok, JSON: body})
		}
		foreign := upload(t, s, outsider, "not-yours.txt")

		// A bad envelope, the same for every kind.
		badEnvelope := map[string]any{
			"type": "renting", "isDraft": "yes", "categoryIds": []any{1.5, "x", 9999},
			"location": map[string]any{"address": map[string]any{"countryISO": "GBR", "regionISO": "Yorkshire", "city": 7},
				"coordinates": map[string]any{"lat": 91, "lon": -181}},
			"price": map[string]any{"type": "barter", "pricePerUnit": map[string]any{"amount": -1, "currency": "GBP"},
				"minPrice": map[string]any{"amount": 10, "currency": "EUR"}, "maxPrice": map[string]any{"amount": 5, "currency": "XAU"}},
			"files":       []any{map[string]any{"id": foreign.ID}, map[string]any{"id": "019a0000-0000-7000-8000-000000000000"}},
			"description": "   ",
			"tags":        []any{"ok", "", strings.Repeat("t", 51)},
		}
		envelopePaths := []string{"type", "isDraft", "categoryIds[0]", "categoryIds[1]", "categoryIds[2]",
			"location.address.countryISO", "location.address.regionISO", "location.address.city",
			"location.coordinates.lat", "location.coordinates.lon",
			"price.type", "price.pricePerUnit.amount", "price.minPrice.currency", "price.maxPrice.currency", "price.maxPrice.amount",
			"files[0].id", "files[1].id", "description", "tags[1]", "tags[2]"}

		noDescription := validBody("feed")
		delete(noDescription, "description")
		cases := []struct {
			name  string
			kind  string
			body  any
			paths []string
		}{
			{"threeTypeErrors", "feed", with(validBody("feed"), "isDraft", "no", "description", 5,
				"price", map[string]any{"type": "fixed", "pricePerUnit": map[string]any{"amount": "12", "currency": "GBP"}}),
				[]string{"isDraft", "description", "price.pricePerUnit.amount"}},
			{"typeAndMissingTogether", "feed", with(noDescription, "isDraft", "yes"),
				[]string{"isDraft", "description"}},
			{"unknownFields", "sheep", with(validBody("sheep"), "descr", "Good sort",
				"properties", map[string]any{"breed": "texel", "sexes": "ewes"},
				"location", map[string]any{"coordinates": map[string]any{"lat": 54, "lon": -2, "alt": 100}}),
				[]string{"descr", "properties.breed", "location.coordinates.alt", "properties.breedType"}},
			{"fileReferenceWithMoreThanItsShape", "feed", with(validBody("feed"), "files", []any{map[string]any{"id": foreign.ID, "size": 46}}),
				[]string{"files[0].size"}},
			{"sheepEmpty", "sheep", map[string]any{}, []string{"type", "isDraft", "categoryIds", "location", "price", "files", "description", "tags", "properties"}},
			{"feedEmpty", "feed", map[string]any{}, []string{"type", "isDraft", "categoryIds", "location", "price", "files", "description", "tags"}},
			{"notAnObject", "cattle", []any{1}, []string{""}},
			{"sheepEverything", "sheep", with(badEnvelope, "properties", map[string]any{
				"breedType": "poodle", "breedSociety": 5, "type": []any{"store", "fat"}, "additionalInfo": []any{"organic", "spotty"},
				"sexes": "mares", "health": map[string]any{"data": false}}),
				append([]string{"properties.breedType", "properties.breedSociety", "properties.type[1]", "properties.additionalInfo[1]",
					"properties.sexes", "properties.health.data"}, envelopePaths...)},
			{"cattleEverything", "cattle", with(badEnvelope, "properties", map[string]any{
				"type": "veal", "breedType": "", "additionalInfo": "organic", "sexes": nil, "quantity": 2.5, "societyNumber": []any{},
				"minAge": 30, "maxAge": 10,
				"health": map[string]any{"tbStatus": "clean", "tbDetails": 1, "tbInterval": "weekly"},
				"performance": map[string]any{"averageWeight": map[string]any{"name": "stone", "conversion": 0, "weight": 480},
					"dailyLiveWeightGain": map[string]any{"name": "kg", "weight": 50}}}),
				append([]string{"properties.type", "properties.breedType", "properties.additionalInfo", "properties.sexes",
					"properties.quantity", "properties.societyNumber", "properties.maxAge", "properties.health.tbStatus",
					"properties.health.tbDetails", "properties.health.tbInterval", "properties.performance.averageWeight.name",
					"properties.performance.averageWeight.conversion", "properties.performance.dailyLiveWeightGain.weight"}, envelopePaths...)},
			{"dogEverything", "working-dog", with(badEnvelope, "properties", map[string]any{
				"breedType": "texel", "sex": "neutered",
				"registration": map[string]any{"dateOfBirth": "01/03/2024", "isRegistered": true, "name": 3}}),
				append([]string{"properties.breedType", "properties.sex", "properties.registration.dateOfBirth",
					"properties.registration.registrationNumber", "properties.registration.name"}, envelopePaths...)},
			{"dogFutureBirth", "working-dog", with(validBody("working-dog"), "properties", map[string]any{
				"breedType": "kelpie", "sex": "male", "registration": map[string]any{"dateOfBirth": "2999-01-01"}}),
				[]string{"properties.registration.dateOfBirth"}},
			{"feedEverything", "feed", with(badEnvelope, "properties", map[string]any{"breedType": "texel"}),
				append([]string{"properties"}, envelopePaths...)},
			{"sheepNullProperties", "sheep", with(validBody("sheep"), "properties", nil), []string{"properties"}},
			{"sheepPropertiesNotObject", "sheep", with(validBody("sheep"), "properties", "texel"), []string{"properties"}},
			{"categoriesOfAnotherKind", "bedding", with(validBody("bedding"), "categoryIds", []int{5, 1, 101, 501, 501}),
				[]string{"categoryIds[1]", "categoryIds[2]", "categoryIds[4]"}},
			{"categoriesNotArray", "feed", with(validBody("feed"), "categoryIds", 4), []string{"categoryIds"}},
			{"filesNotObjects", "feed", with(validBody("feed"), "files", []any{"abc", map[string]any{"id": 7}}), []string{"files[0]", "files[1].id"}},
			{"filesDuplicate", "feed", with(validBody("feed"), "files", []any{map[string]any{"id": foreign.ID}, map[string]any{"id": foreign.ID}}),
				[]string{"files[0].id", "files[1].id"}},
			{"locationNoCoordinates", "feed", with(validBody("feed"), "location", map[string]any{"address": map[string]any{}}), []string{"location.coordinates"}},
			{"priceMissingParts", "feed", with(validBody("feed"), "price", map[string]any{"pricePerUnit": map[string]any{}}),
				[]string{"price.type", "price.pricePerUnit.amount", "price.pricePerUnit.currency"}},
			{"priceNull", "feed", with(validBody("feed"), "price", nil), []string{"price"}},
			{"unknownCurrency", "feed", with(validBody("feed"), "price", map[string]any{"type": "fixed", "pricePerUnit": map[string]any{"amount": 1, "currency": "XTS"}}),
				[]string{"price.pricePerUnit.currency"}},
			{"tooLong", "feed", with(validBody("feed"), "description", strings.Repeat("d", 5001)), []string{"description"}},
		}
		// The codes of some cases' paths (same order).
		codes := map[string][]string{
			"threeTypeErrors":                   {"type", "type", "type"},
			"typeAndMissingTogether":            {"type", "required"},
			"unknownFields":                     {"unknown_field", "unknown_field", "unknown_field", "required"},
			"fileReferenceWithMoreThanItsShape": {"unknown_field"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := post(c.kind, c.body)
				wantPaths(t, r, c.paths...)
				for i, code := range codes[c.name] {
					for _, fe := range r.Error(t).Validation {
						if fe.Path == c.paths[i] && fe.Code != code {
							t.Errorf("%s: code %s, want %s", fe.Path, fe.Code, code)
						}
					}
				}
				if _, isMap := c.body.(map[string]any); isMap {
					if e := r.Error(t); len(e.Body) == 0 || string(e.Body) == "null" {
						t.Fatalf("body not echoed: %s", r.Body)
					}
				}
			})
		}
		t.Run("nothingStored", func(t *testing.T) {
			if n := countRows(t, db); n != 0 {
				t.Fatalf("%d listings stored by failing requests", n)
			}
		})
		s.Run(t, []testkit.Scenario{
			{Name: "malformed400", Req: testkit.Request{Method: http.MethodPost, Path: createPath["sheep"], Token: tok, JSON: `{"type":`}, Status: 400, Code: "bad_request"},
			{Name: "trailing400", Req: testkit.Request{Method: http.MethodPost, Path: createPath["sheep"], Token: tok, JSON: `{} {}`}, Status: 400, Code: "bad_request"},
			{Name: "contentType400", Req: testkit.Request{Method: http.MethodPost, Path: createPath["sheep"], Token: tok, Body: strings.NewReader("type=selling"), ContentType: "application/x-www-form-urlencoded"}, Status: 400, Code: "bad_request"},
			{Name: "noToken401", Req: testkit.Request{Method: http.MethodPost, Path: createPath["sheep"], JSON: validBody("sheep")}, Status: 401, Code: unauthorised},
			{Name: "noOrganisation403", Req: testkit.Request{Method: http.MethodPost, Path: createPath["feed"], Token: s.Token(noOrg), JSON: validBody("feed")}, Status: 403, Code: "forbidden"},
			{Name: "tooLarge413", Req: testkit.Request{Method: http.MethodPost, Path: createPath["feed"], Token: tok, JSON: with(validBody("feed"), "description", strings.Repeat("x", 2<<20))}, Status: 413, Code: "payload_too_large"},
		})
		if n := countRows(t, db); n != 0 {
			t.Fatalf("%d listings stored by failing requests", n)
		}
	})
}

func TestCategories(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newServer(t, db)
		tok := s.Token(outsider)
		type category struct {
			ID       int    `json:"id"`
			Name     string `json:"name"`
			Kind     string `json:"kind"`
			Group    string `json:"group"`
			ParentID *int   `json:"parentId"`
			Value    string `json:"value"`
		}
		var all []category
		s.Run(t, []testkit.Scenario{
			{Name: "list200", Req: testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/categories", Token: tok}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					r.Decode(t, &all)
					if r.Header.Get("X-Total-Count") == "" || len(all) < 150 {
						t.Fatalf("%d categories, X-Total-Count %q", len(all), r.Header.Get("X-Total-Count"))
					}
					byID := map[int]category{}
					for _, c := range all {
						if c.ParentID != nil {
							p, ok := byID[*c.ParentID]
							if !ok || p.Kind != c.Kind {
								t.Fatalf("%+v: parent not listed before it, or of another kind", c)
							}
						}
						byID[c.ID] = c
					}
					texel := byID[101]
					if texel.Name != "Texel" || texel.Kind != "sheep" || texel.Group != "breed" || texel.Value != "texel" || texel.ParentID == nil || *texel.ParentID != 1 {
						t.Fatalf("Texel %+v", texel)
					}
					for _, name := range []string{"Suffolk", "Beltex", "Charollais", "Mule", "Lleyn", "Welsh Mountain", "Scottish Blackface",
						"Swaledale", "Herdwick", "Cheviot", "Jacob", "Dorset", "Aberdeen Angus", "Hereford", "Limousin", "Charolais",
						"Simmental", "British Blue", "Holstein Friesian", "Jersey", "Shorthorn", "Highland", "Welsh Black", "Salers",
						"Border Collie", "Kelpie", "Huntaway", "Welsh Sheepdog", "Hay", "Haylage", "Silage", "Feed straw", "Grain",
						"Concentrates", "Wheat straw", "Barley straw", "Wood shavings", "Sawdust", "Shredded paper"} {
						found := false
						for _, c := range all {
							found = found || c.Name == name
						}
						if !found {
							t.Errorf("category %q missing", name)
						}
					}
				}},
			{Name: "kind200", Req: testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/categories?kind=working-dog", Token: tok}, Status: 200,
				Check: func(t *testing.T, r *testkit.Response) {
					var dogs []category
					r.Decode(t, &dogs)
					if len(dogs) < 5 {
						t.Fatalf("%d dog categories", len(dogs))
					}
					for _, c := range dogs {
						if c.Kind != "working-dog" {
							t.Fatalf("%+v", c)
						}
					}
				}},
			{Name: "kind400", Req: testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/categories?kind=pigs", Token: tok}, Status: 400, Code: "validation_failed"},
			{Name: "noToken401", Req: testkit.Request{Method: http.MethodGet, Path: "/livestock/v1/categories"}, Status: 401, Code: unauthorised},
		})
		// The breeds of the tree are exactly the breedType enumerations of the document.
		spec := testkit.LoadSpec(t, s.App)
		for kind, schema := range map[string]string{"sheep": "SheepBreed", "cattle": "CattleBreed", "working-dog": "WorkingDogBreed"} {
			var values []string
			for _, c := range all {
				if c.Kind == kind && c.Group == "breed" {
					values = append(values, c.Value)
				}
			}
			enum := spec.Doc.Components.Schemas[schema].Value.Enum
			if len(enum) != len(values) {
				t.Fatalf("%s: %d values in openapi.yaml, %d breeds", schema, len(enum), len(values))
			}
			for i := range enum {
				if enum[i] != values[i] {
					t.Fatalf("%s[%d] = %v, breed value %s", schema, i, enum[i], values[i])
				}
			}
		}
	})
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
