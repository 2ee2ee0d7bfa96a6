package listings

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/agritrade/api/livestock/internal/categories"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/idempotency"
	"github.com/gin-gonic/gin"
)

// Handler serves the listing routes.
type Handler struct {
	svc *Service
}

// createPaths maps the create routes of API.md to the kind they create.
var createPaths = map[string]categories.Kind{
	"sheep":        categories.Sheep,
	"cattle":       categories.Cattle,
	"working-dogs": categories.WorkingDog,
	"feed":         categories.Feed,
	"bedding":      categories.Bedding,
}

// Mount binds the listing routes and the moderation routes on the module's group.
func (f *Feature) Mount(g gin.IRouter) {
	h := &Handler{svc: f.Service}
	l := g.Group("/listings", auth.RequireAuth())
	l.GET("", httpx.H(h.search))
	for path, kind := range createPaths {
		// A create writes in one transaction: its Idempotency-Key is claimed in it.
		l.POST("/"+path, idempotency.InTx, httpx.H(h.create(kind)))
	}
	l.GET("/:id", httpx.H(h.get))
	l.PATCH("/:id", httpx.H(h.update))
	l.POST("/:id/close", httpx.H(h.close))
	l.POST("/:id/report", httpx.H(h.report))
	l.PUT("/:id/wishlist", httpx.H(h.wishlist(true)))
	l.DELETE("/:id/wishlist", httpx.H(h.wishlist(false)))

	ss := g.Group("/saved-searches", auth.RequireAuth())
	ss.POST("", httpx.H(h.createSaved))
	ss.GET("", httpx.H(h.listSaved))
	ss.DELETE("/:id", httpx.H(h.deleteSaved))

	admin := g.Group("/admin", auth.RequireRole(auth.RoleAdmin))
	admin.GET("/reports", httpx.H(h.reports))
	admin.POST("/listings/:id/review", httpx.H(h.review))
}

// confirmation is the seed's confirmation body.
type confirmation struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	ID      string `json:"id,omitempty"`
}

func confirm(c *gin.Context, message, id string) {
	c.JSON(http.StatusOK, confirmation{Status: "success", Message: message, ID: id})
}

func (h *Handler) create(kind categories.Kind) httpx.Handler {
	return func(c *gin.Context) error {
		raw, err := httpx.ReadJSONBody(c)
		if err != nil {
			return err
		}
		id, err := h.svc.Create(c.Request.Context(), auth.FromContext(c), kind, raw)
		if err != nil {
			return err
		}
		confirm(c, "the "+string(kind)+" listing was created", id)
		return nil
	}
}

func (h *Handler) get(c *gin.Context) error {
	l, err := h.svc.Get(c.Request.Context(), auth.FromContext(c), c.Param("id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, l)
	return nil
}

func (h *Handler) update(c *gin.Context) error {
	raw, err := httpx.ReadJSONBody(c)
	if err != nil {
		return err
	}
	l, err := h.svc.Update(c.Request.Context(), auth.FromContext(c), c.Param("id"), raw)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, l)
	return nil
}

func (h *Handler) close(c *gin.Context) error {
	raw, err := httpx.ReadJSONBody(c)
	if err != nil {
		return err
	}
	if err := h.svc.Close(c.Request.Context(), auth.FromContext(c), c.Param("id"), raw); err != nil {
		return err
	}
	confirm(c, "the listing was closed", "")
	return nil
}

func (h *Handler) report(c *gin.Context) error {
	raw, err := httpx.ReadJSONBody(c)
	if err != nil {
		return err
	}
	if err := h.svc.Report(c.Request.Context(), auth.FromContext(c), c.Param("id"), raw); err != nil {
		return err
	}
	confirm(c, "thank you: the listing was reported for review", "")
	return nil
}

func (h *Handler) wishlist(on bool) httpx.Handler {
	return func(c *gin.Context) error {
		if err := h.svc.Wishlist(c.Request.Context(), auth.FromContext(c), c.Param("id"), on); err != nil {
			return err
		}
		if on {
			confirm(c, "the listing is on your wishlist", "")
		} else {
			confirm(c, "the listing is not on your wishlist", "")
		}
		return nil
	}
}

func (h *Handler) search(c *gin.Context) error {
	sr, err := ParseSearch(httpx.NewQuery(c))
	if err != nil {
		return err
	}
	ctx, p := c.Request.Context(), auth.FromContext(c)
	switch {
	case !sr.Docs:
		f, err := h.svc.Facets(ctx, p, sr.Filter)
		if err != nil {
			return err
		}
		c.Header(httpx.HeaderTotalCount, strconv.Itoa(f.TotalDocs))
		c.JSON(http.StatusOK, f)
		return nil
	case sr.CSV:
		w, err := httpx.StreamCSV(c, "listings.csv", csvHeader)
		if err != nil {
			return err
		}
		if err := h.svc.Stream(ctx, p, sr, func(l *Listing) error { return w.Write(csvRow(l)) }); err != nil {
			return err
		}
		return w.Close()
	}
	list, total, err := h.svc.Search(ctx, p, sr)
	if err != nil {
		return err
	}
	body, err := listingsJSON(list)
	if err != nil {
		return err
	}
	c.Header(httpx.HeaderTotalCount, strconv.Itoa(total))
	c.Data(http.StatusOK, "application/json; charset=utf-8", body)
	return nil
}

// listingsJSON is the JSON array of a page, the bytes encoding/json writes for
// it: each listing renders itself (MarshalJSON, through json.Marshal, so
// already compact and HTML-escaped), joined as they are. encoding/json would
// parse each listing's output again to check and compact it (5% of a search's
// CPU in a profile).
func listingsJSON(list []*Listing) ([]byte, error) {
	buf := make([]byte, 0, 1024*len(list)+2)
	buf = append(buf, '[')
	for i, l := range list {
		if i > 0 {
			buf = append(buf, ',')
		}
		b, err := l.MarshalJSON()
		if err != nil {
			return nil, err
		}
		buf = append(buf, b...)
	}
	return append(buf, ']'), nil
}

// csvHeader are the CSV columns of the search (openapi.yaml); lists are ";"-separated.
var csvHeader = []string{"id", "kind", "type", "status", "organisationId", "organisationName", "categoryIds", "description",
	"priceType", "priceAmount", "priceCurrency", "minPrice", "maxPrice", "breedType", "sexes", "quantity", "city", "region",
	"postcode", "lat", "lon", "distanceKm", "tags", "createdAtUTC", "updatedAtUTC"}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func numPtr(f *float64) string {
	if f == nil {
		return ""
	}
	return num(*f)
}

func moneyAmount(m *Money) string {
	if m == nil {
		return ""
	}
	return num(m.Amount)
}

func csvRow(l *Listing) []string {
	ids := make([]string, len(l.CategoryIDs))
	for i, id := range l.CategoryIDs {
		ids[i] = strconv.Itoa(id)
	}
	var breed, sexes, quantity, city, region, postcode, lat, lon string
	if l.Properties != nil {
		sf := l.Properties.searchable()
		breed, sexes = sf.Breed, sf.Sexes
		if cp, ok := l.Properties.(*CattleProperties); ok && cp.Quantity != nil {
			quantity = strconv.Itoa(*cp.Quantity)
		}
	}
	if loc := l.Location; loc != nil {
		city, region, postcode = loc.Address.City, loc.Address.Region, loc.Address.Postcode
		lat, lon = num(loc.Coordinates.Lat), num(loc.Coordinates.Lon)
	}
	return []string{l.ID, string(l.Kind), l.Type, l.Status, l.OrganisationID, l.OrganisationName, strings.Join(ids, ";"),
		l.Description, l.Price.Type, num(l.Price.PricePerUnit.Amount), l.Price.PricePerUnit.Currency,
		moneyAmount(l.Price.MinPrice), moneyAmount(l.Price.MaxPrice), breed, sexes, quantity, city, region, postcode,
		lat, lon, numPtr(l.DistanceKm), strings.Join(l.Tags, ";"), l.CreatedAt.UTC().Format(timeFormat),
		l.UpdatedAt.UTC().Format(timeFormat)}
}

func (h *Handler) reports(c *gin.Context) error {
	q := httpx.NewQuery(c)
	page := q.Page([]string{"createdAtUTC"}, "createdAtUTC", false)
	var f ReportFilter
	switch q.Enum("status", "open", "reviewed", "all") {
	case "", "open":
		open := true
		f.Open = &open
	case "reviewed":
		open := false
		f.Open = &open
	}
	f.ListingID = q.String("listingId")
	if err := q.Err(); err != nil {
		return err
	}
	list, total, err := h.svc.Reports(c.Request.Context(), f, page.Limit, page.Offset, page.SortDesc)
	if err != nil {
		return err
	}
	c.Header(httpx.HeaderTotalCount, strconv.Itoa(total))
	c.JSON(http.StatusOK, list)
	return nil
}

func (h *Handler) review(c *gin.Context) error {
	raw, err := httpx.ReadJSONBody(c)
	if err != nil {
		return err
	}
	if err := h.svc.Review(c.Request.Context(), auth.FromContext(c), c.Param("id"), raw); err != nil {
		return err
	}
	confirm(c, "the reports of the listing were reviewed", "")
	return nil
}

func (h *Handler) createSaved(c *gin.Context) error {
	raw, err := httpx.ReadJSONBody(c)
	if err != nil {
		return err
	}
	id, err := h.svc.CreateSavedSearch(c.Request.Context(), auth.FromContext(c), raw)
	if err != nil {
		return err
	}
	confirm(c, "the search was saved; new listings that match it will raise an alert", id)
	return nil
}

func (h *Handler) listSaved(c *gin.Context) error {
	q := httpx.NewQuery(c)
	pg := q.Page(nil, "", false)
	if err := q.Err(); err != nil {
		return err
	}
	out, total, err := h.svc.SavedSearches(c.Request.Context(), auth.FromContext(c), pg.Limit, pg.Offset)
	if err != nil {
		return err
	}
	c.Header(httpx.HeaderTotalCount, strconv.Itoa(total))
	c.JSON(http.StatusOK, out)
	return nil
}

func (h *Handler) deleteSaved(c *gin.Context) error {
	if err := h.svc.DeleteSavedSearch(c.Request.Context(), auth.FromContext(c), c.Param("id")); err != nil {
		return err
	}
	confirm(c, "the saved search was deleted", "")
	return nil
}
