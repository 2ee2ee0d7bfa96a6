package main

import (
	"fmt"
	"net/http"
	"time"
)

type demoStep = struct {
	name string
	fn   func() (string, error)
}

// moduleSteps are the Livestock and Logistics parts of the sample.
func (d *demo) moduleSteps() []demoStep {
	return []demoStep{{"loads", d.loads}, {"listings", d.listings}}
}

// demoLoad is one haulage job of the sample: commodity ids are the GB items of
// the reference data (1 wheat, 2 barley, 4 oilseed rape, 5 beans).
type demoLoad struct {
	ref, pickup, dropoff string
	commodity            int
	tonnes               float64
	daysAhead            int
	state                string // upcoming, in-transit, completed
}

var demoLoads = []demoLoad{
	{"HF-2026-101", "LD3 0SU", "SA31 3EP", 1, 29.0, 3, "upcoming"},
	{"HF-2026-102", "LD3 0SU", "HR4 9QS", 2, 28.5, 1, "in-transit"},
	{"HF-2026-103", "LD2 3NG", "CH5 2QR", 4, 27.8, -4, "completed"},
	{"HF-2026-104", "LD2 3NG", "NP20 2UR", 5, 26.0, -9, "completed"},
	{"HF-2026-105", "SY21 7EG", "SA31 3EP", 1, 29.2, 10, "upcoming"},
}

func (d *demo) loads() (string, error) {
	states := map[string]int{}
	for i, l := range demoLoads {
		date := time.Now().UTC().AddDate(0, 0, l.daysAhead).Format(time.DateOnly)
		var load struct {
			ID string `json:"id"`
		}
		body := map[string]any{
			"organiserId": demoFarmer.OrgID, "organiserName": demoFarmer.OrgName, "commodityId": l.commodity,
			"reference": l.ref + d.again, "deliveryDateISO": date, "weight": l.tonnes, "weightNet": nil,
			"files": nil, "tags": []string{"demo", "harvest-2026"}, "pickupPostcode": l.pickup, "dropoffPostcode": l.dropoff,
		}
		if err := d.as(fmt.Sprintf("%s%d", demoLoadPrefix, 101+i)).call(http.MethodPost, "/logistics/v1/loads", demoFarmer, body, &load); err != nil {
			return "", err
		}
		if l.state != "upcoming" {
			if err := d.call(http.MethodPost, "/logistics/v1/loads/send-to-carrier", demoFarmer,
				[]map[string]any{{"loadId": load.ID, "carrierId": demoHaul.OrgID}}, nil); err != nil {
				return "", err
			}
			if err := d.call(http.MethodPost, "/logistics/v1/loads/send-to-driver", demoHaul,
				[]map[string]any{{"loadId": load.ID, "driverId": demoDriver.UserID}}, nil); err != nil {
				return "", err
			}
		}
		if l.state == "completed" {
			if err := d.call(http.MethodPost, "/logistics/v1/loads/"+load.ID+"/proof-of-delivery", demoDriver, map[string]any{
				"weightNet": l.tonnes - 0.3, "ticketNumber": "WB-" + l.ref[len(l.ref)-3:], "vehicleRegistration": "CU70 HGV",
				"files": []any{demoFiles["ticket"]},
			}, nil); err != nil {
				return "", err
			}
		}
		states[l.state]++
	}
	return fmt.Sprintf("%d upcoming, %d in transit, %d completed", states["upcoming"], states["in-transit"], states["completed"]), nil
}

// demoPlace is where a listing stands: real market towns with their region.
type demoPlace struct {
	town, region, regionISO, postcode, country, countryISO string
	lat, lon                                               float64
}

var (
	builth     = demoPlace{"Builth Wells", "Powys", "GB-POW", "LD2 3SL", "United Kingdom", "GB", 52.1497, -3.4036}
	hexham     = demoPlace{"Hexham", "Northumberland", "GB-NBL", "NE46 3NX", "United Kingdom", "GB", 54.9713, -2.1019}
	thirsk     = demoPlace{"Thirsk", "North Yorkshire", "GB-NYK", "YO7 1PS", "United Kingdom", "GB", 54.2326, -1.3416}
	stirling   = demoPlace{"Stirling", "Stirling", "GB-STG", "FK8 2EA", "United Kingdom", "GB", 56.1165, -3.9369}
	enniskill  = demoPlace{"Enniskillen", "Fermanagh and Omagh", "GB-FMO", "BT74 7BP", "United Kingdom", "GB", 54.3438, -7.6315}
	kilkenny   = demoPlace{"Kilkenny", "Kilkenny", "IE-KK", "R95 A0C2", "Ireland", "IE", 52.6541, -7.2448}
	ballinasl  = demoPlace{"Ballinasloe", "Galway", "IE-G", "H53 X2Y7", "Ireland", "IE", 53.3275, -8.2192}
	skibbereen = demoPlace{"Skibbereen", "Cork", "IE-CO", "P81 YH79", "Ireland", "IE", 51.5500, -9.2667}
)

func (pl demoPlace) location() map[string]any {
	return map[string]any{
		"address": map[string]any{"name": pl.town, "city": pl.town, "region": pl.region, "regionISO": pl.regionISO,
			"postcode": pl.postcode, "countryName": pl.country, "countryISO": pl.countryISO},
		"coordinates": map[string]any{"lat": pl.lat, "lon": pl.lon},
	}
}

func price(amount float64, currency, typ string) map[string]any {
	return map[string]any{"type": typ, "pricePerUnit": map[string]any{"amount": amount, "currency": currency}}
}

type demoListing struct {
	kind, typ   string // route segment; selling or buying
	who         string // farmer or buyer
	place       demoPlace
	categoryIDs []int
	price       map[string]any
	description string
	tags        []string
	properties  map[string]any
	file        string
	then        string // "", "sold" or "draft"
}

var demoListings = []demoListing{
	{"sheep", "selling", "farmer", builth, []int{1, 101, 152}, price(210, "GBP", "fixed"),
		"40 Texel cross ewes, scanned 185%, due to lamb from 1 March. Vaccinated, teeth and udders checked.",
		[]string{"scanned", "breeding"}, map[string]any{"breedType": "texel", "type": []string{"breeding"}, "additionalInfo": []string{"in-lamb", "crossbred"}, "sexes": "ewes", "health": map[string]any{"data": "Heptavac P+ and Footvax given; MV accredited flock"}}, "ewes", ""},
	{"sheep", "selling", "farmer", hexham, []int{1, 125, 150}, price(78, "GBP", "negotiable"),
		"120 Scottish Blackface store lambs off the hill, wormed and weaned.", []string{"stores"},
		map[string]any{"breedType": "scottish-blackface", "type": []string{"store"}, "sexes": "lambs"}, "", "sold"},
	{"sheep", "buying", "buyer", kilkenny, []int{1, 102}, price(190, "EUR", "negotiable"),
		"Wanted: 20 Suffolk shearling rams for the autumn sales.", []string{"wanted"},
		map[string]any{"breedType": "suffolk", "sexes": "shearlings", "additionalInfo": []string{"pedigree"}}, "", ""},
	{"cattle", "selling", "farmer", thirsk, []int{2, 201, 252}, price(1450, "GBP", "fixed"),
		"12 Aberdeen Angus store bullocks, 14–16 months, home bred, TB tested clear in September.", []string{"stores", "home-bred"},
		map[string]any{"type": "stores", "breedType": "aberdeen-angus", "sexes": "steers", "quantity": 12, "minAge": 14, "maxAge": 16,
			"health":      map[string]any{"tbStatus": "officially-tb-free", "tbInterval": "annual", "tbDetails": "Whole-herd test clear 12 Sep 2026"},
			"performance": map[string]any{"averageWeight": map[string]any{"name": "kg", "conversion": 1, "weight": 520}}}, "cattle", ""},
	{"cattle", "selling", "farmer", enniskill, []int{2, 203, 250}, price(420, "GBP", "auction"),
		"Limousin cross heifer calves, 3–4 months, suckled.", []string{"calves"},
		map[string]any{"type": "calves", "breedType": "limousin", "sexes": "heifers", "quantity": 8, "minAge": 3, "maxAge": 4,
			"health": map[string]any{"tbStatus": "unrestricted", "tbInterval": "annual"}}, "", ""},
	{"cattle", "buying", "buyer", ballinasl, []int{2, 204}, price(1600, "EUR", "negotiable"),
		"Looking for Charolais weanling bulls for finishing, any number.", []string{"wanted"},
		map[string]any{"breedType": "charolais", "sexes": "bulls", "minAge": 6, "maxAge": 10}, "", ""},
	{"working-dogs", "selling", "farmer", stirling, []int{3, 301}, price(2500, "GBP", "fixed"),
		"Border Collie bitch, 2 years, working sheep on the hill, ISDS registered.", []string{"trained"},
		map[string]any{"breedType": "border-collie", "sex": "female", "registration": map[string]any{"dateOfBirth": "2024-04-02", "isRegistered": true, "registrationNumber": "ISDS-336112", "name": "Fly"}}, "", ""},
	{"feed", "selling", "farmer", skibbereen, []int{4, 403}, price(38, "EUR", "fixed"),
		"200 bales of first-cut haylage, wrapped six times, tested at 11.2 ME.", []string{"haylage"}, nil, "", ""},
	{"feed", "selling", "farmer", builth, []int{4, 400}, price(95, "GBP", "fixed"),
		"Meadow hay in small bales, barn stored, delivery possible within 30 miles.", []string{"hay"}, nil, "", "draft"},
	{"bedding", "selling", "farmer", thirsk, []int{5, 501}, price(65, "GBP", "negotiable"),
		"Wheat straw, 120x90 Heston bales, 300 available ex-farm.", []string{"straw"}, nil, "", ""},
}

func (d *demo) listings() (string, error) {
	kinds := map[string]bool{}
	var sold, drafts int
	// The ids this run gave its listings (the known ones, or fresh ones in a
	// second sample), for the report and the short link below.
	ids := make([]string, len(demoListings))
	for i, l := range demoListings {
		who := demoFarmer
		if l.who == "buyer" {
			who = demoBuyer
		}
		files := []any{}
		if l.file != "" {
			files = append(files, demoFiles[l.file])
		}
		body := map[string]any{"type": l.typ, "isDraft": l.then == "draft", "categoryIds": l.categoryIDs, "location": l.place.location(),
			"price": l.price, "files": files, "description": l.description, "tags": l.tags}
		if l.properties != nil {
			body["properties"] = l.properties
		}
		var created struct {
			ID string `json:"id"`
		}
		if err := d.as(fmt.Sprintf("%s%03d", demoListingPrefix, i+1)).call(http.MethodPost, "/livestock/v1/listings/"+l.kind, who, body, &created); err != nil {
			return "", err
		}
		ids[i] = created.ID
		kinds[l.kind] = true
		switch l.then {
		case "sold":
			if err := d.call(http.MethodPost, "/livestock/v1/listings/"+created.ID+"/close", who, map[string]any{"status": "sold"}, nil); err != nil {
				return "", err
			}
			sold++
		case "draft":
			drafts++
		}
		if l.kind == "sheep" && l.file != "" {
			// The buyer asks about the ewes: a conversation attached to the listing.
			if err := d.as(demoListingConversation).call(http.MethodPost, "/system/v1/conversations", demoBuyer, map[string]any{
				"to": who.UserID, "message": "Would you take 200 a head for the lot?", "listingId": created.ID, "listingType": "livestock",
			}, nil); err != nil {
				return "", err
			}
			if err := d.call(http.MethodPut, "/livestock/v1/listings/"+created.ID+"/wishlist", demoBuyer, nil, nil); err != nil {
				return "", err
			}
		}
	}
	// The buyer reports the haylage (an admin reviews it), the farmer saves a
	// search (the delete example's), and a short link points at the ewes.
	if err := d.call(http.MethodPost, "/livestock/v1/listings/"+ids[7]+"/report", demoBuyer, map[string]any{
		"reason": "misleading", "message": "The photos are of a different batch of bales.",
	}, nil); err != nil {
		return "", err
	}
	if err := d.as(demoSavedSearch).call(http.MethodPost, "/livestock/v1/saved-searches", demoFarmer, map[string]any{
		"name": "Store cattle in Yorkshire", "query": map[string]any{"f:commodityType": []string{"cattle"}, "latitude": 54.23, "longitude": -1.34, "distanceKm": 60},
	}, nil); err != nil {
		return "", err
	}
	if err := d.as(demoShortCode).call(http.MethodPost, "/system/v1/short-urls", demoFarmer, map[string]any{
		"template": "default", "url": d.base + "/livestock/v1/listings/" + ids[0], "source": "demo", "campaign": "texel-ewes",
	}, nil); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d listings of %d kinds in GB and IE (%d sold, %d draft), one wishlisted, discussed and shared, one reported; a saved search", len(demoListings), len(kinds), sold, drafts), nil
}
