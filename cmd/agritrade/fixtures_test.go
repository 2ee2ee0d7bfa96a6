package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"
	"mime/multipart"
	"testing"
	"time"

	"github.com/agritrade/api/platform/auth"
)

// The fault tests' requests are made from the demo's sample (demo.go,
// demo_modules.go): the same people, places and bodies that the demo sends
// through the API, so that each is a valid request of its route.

// faultSecret is the HS256 secret of the fault tests' processes.
const faultSecret = "fault-tests-secret-not-for-production"

func faultToken(t testing.TB, p auth.Principal) string {
	t.Helper()
	tok, err := auth.Mint([]byte(faultSecret), auth.MintOptions{Principal: p, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func jsonBody(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// listingBody is a valid create body of the kind of demoListings[i].
func listingBody(t testing.TB, i int, description string) (kind string, body []byte) {
	t.Helper()
	l := demoListings[i%len(demoListings)]
	m := map[string]any{"type": l.typ, "isDraft": false, "categoryIds": l.categoryIDs, "location": l.place.location(),
		"price": l.price, "files": []any{}, "description": description, "tags": l.tags}
	if l.properties != nil {
		m["properties"] = l.properties
	}
	return l.kind, jsonBody(t, m)
}

// loadBodyMap is a valid create body of a load organised by the demo farmer.
func loadBodyMap(reference string, daysAhead int) map[string]any {
	l := demoLoads[0]
	return map[string]any{
		"organiserId": demoFarmer.OrgID, "organiserName": demoFarmer.OrgName, "commodityId": l.commodity,
		"reference": reference, "deliveryDateISO": time.Now().UTC().AddDate(0, 0, daysAhead).Format(time.DateOnly),
		"weight": l.tonnes, "weightNet": nil, "files": nil, "tags": []string{"fault-test"},
		"pickupPostcode": l.pickup, "dropoffPostcode": l.dropoff,
	}
}

// upload is a multipart upload of a small PNG (the demo's photo) whose pixels
// depend on seed, so that every upload has different bytes.
func upload(t testing.TB, who auth.Principal, seed int) (body []byte, contentType string, png []byte) {
	t.Helper()
	png = photo(color.RGBA{R: uint8(seed), G: uint8(seed >> 8), B: uint8(seed >> 16), A: 255})
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, kv := range [][2]string{{"bucket", "images"}, {"type", "image"}, {"name", fmt.Sprintf("field-%d.png", seed)}, {"organisationId", who.OrgID}} {
		if err := w.WriteField(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	part, err := w.CreateFormFile("file", fmt.Sprintf("field-%d.png", seed))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := part.Write(png); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), w.FormDataContentType(), png
}
