package loads

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/idempotency"
	"github.com/gin-gonic/gin"
)

// Handler serves the load routes: bind, call the service, respond.
type Handler struct {
	svc      *Service
	maxItems int
}

// newHandler returns the handler; maxItems caps list bodies (0: the default).
func newHandler(svc *Service, maxItems int) *Handler {
	return &Handler{svc: svc, maxItems: maxItems}
}

// mount binds the routes on the /loads group (authentication required).
func (h *Handler) mount(g gin.IRouter) {
	g.GET("", httpx.H(h.search))
	// The creates write in one transaction: their Idempotency-Key is claimed in it.
	g.POST("", idempotency.InTx, httpx.H(h.createAsOrganiser))
	g.POST("/carrier", idempotency.InTx, httpx.H(h.createAsCarrier))
	g.GET("/by-ids", httpx.H(h.byIDs))
	g.GET("/completed", httpx.H(h.completed))
	g.POST("/send-to-driver", httpx.H(h.sendToDriver))
	g.POST("/send-to-carrier", httpx.H(h.sendToCarrier))
	g.POST("/proof-of-delivery", httpx.H(h.proveDelivery))
	g.GET("/:id", httpx.H(h.get))
	g.POST("/:id/proof-of-delivery", httpx.H(h.proveDeliveryOf))
}

// respondOneOrMany answers an array for list bodies and the object otherwise.
func respondOneOrMany(c *gin.Context, loads []*Load, list bool) {
	if list {
		c.JSON(http.StatusOK, loads)
		return
	}
	c.JSON(http.StatusOK, loads[0])
}

func (h *Handler) createAsOrganiser(c *gin.Context) error {
	forms, list, err := httpx.BindOneOrMany[OrganiserForm](c, h.maxItems)
	if err != nil {
		return err
	}
	loads, err := h.svc.CreateAsOrganiser(c.Request.Context(), auth.FromContext(c), forms, list)
	if err != nil {
		return err
	}
	respondOneOrMany(c, loads, list)
	return nil
}

func (h *Handler) createAsCarrier(c *gin.Context) error {
	forms, list, err := httpx.BindOneOrMany[CarrierForm](c, h.maxItems)
	if err != nil {
		return err
	}
	loads, err := h.svc.CreateAsCarrier(c.Request.Context(), auth.FromContext(c), forms, list)
	if err != nil {
		return err
	}
	respondOneOrMany(c, loads, list)
	return nil
}

// searchRequest is a parsed search query.
type searchRequest struct {
	Filter Filter
	CSV    bool
}

// parseSearch reads the search's query parameters, reporting every problem.
func parseSearch(c *gin.Context) (searchRequest, error) {
	q := httpx.NewQuery(c)
	page := q.Page(SortFields, SortDeliveryDate, false)
	since := q.Since("updatedSinceUTC")
	if since != nil && !q.Has("sortBy") {
		// Catching up: the oldest change first, so a client pages forward and
		// keeps the last updatedAtUTC it saw as its next updatedSinceUTC.
		page.SortBy = SortUpdated
	}
	from, to := dateRange(q)
	status := q.Enum("f:status", Statuses...)
	format := q.Enum("format", "json", "csv")
	f := NewFilter(q.Fields(), q.String("query"), from, to)
	f.OrganiserID, f.CarrierID, f.Status = q.String("f:organiserId"), q.String("f:carrierId"), Status(status)
	f.SortBy, f.SortDesc, f.Limit, f.Offset = page.SortBy, page.SortDesc, page.Limit, page.Offset
	f.UpdatedSince = since
	if err := q.Err(); err != nil {
		return searchRequest{}, err
	}
	return searchRequest{Filter: f, CSV: format == "csv"}, nil
}

// dateRange reads startDateISO and endDateISO; a date-only end covers its whole day.
func dateRange(q *httpx.Query) (from, to *time.Time) {
	if t, ok := q.Date("startDateISO", false); ok {
		from = &t
	}
	if t, ok := q.Date("endDateISO", true); ok {
		to = &t
	}
	return from, to
}

func (h *Handler) search(c *gin.Context) error {
	req, err := parseSearch(c)
	if err != nil {
		return err
	}
	p := auth.FromContext(c)
	if req.CSV {
		return h.streamCSV(c, "loads.csv", func(fn func(*Load) error) error {
			return h.svc.Stream(c.Request.Context(), p, req.Filter, fn)
		})
	}
	loads, total, err := h.svc.Search(c.Request.Context(), p, req.Filter)
	if err != nil {
		return err
	}
	c.Header(httpx.HeaderTotalCount, strconv.Itoa(total))
	c.JSON(http.StatusOK, loads)
	return nil
}

func (h *Handler) completed(c *gin.Context) error {
	q := httpx.NewQuery(c)
	from, to := dateRange(q)
	NewFilter(q.Fields(), "", from, to) // checks the range
	if err := q.Err(); err != nil {
		return err
	}
	p := auth.FromContext(c)
	return h.streamCSV(c, "completed-loads.csv", func(fn func(*Load) error) error {
		return h.svc.Completed(c.Request.Context(), p, from, to, fn)
	})
}

// streamCSV writes the loads that each calls fn with as CSV. The response
// starts with the first row (or at the end), so a failure before any row
// still answers a proper error.
func (h *Handler) streamCSV(c *gin.Context, filename string, each func(fn func(*Load) error) error) error {
	var w *httpx.CSVWriter
	start := func() error {
		if w != nil {
			return nil
		}
		var err error
		w, err = httpx.StreamCSV(c, filename, CSVHeader)
		return err
	}
	err := each(func(l *Load) error {
		if err := start(); err != nil {
			return err
		}
		return w.Write(CSVRow(l))
	})
	if err != nil {
		if w != nil {
			httpx.Logger(c).WithError(err).Warn("CSV stream stopped")
		}
		return err
	}
	if err := start(); err != nil {
		return err
	}
	return w.Close()
}

// CSVHeader is the stable column list of load CSVs (search and completed
// export), documented in openapi.yaml.
var CSVHeader = []string{
	"id", "reference", "organiserId", "organiserName", "carrierId", "carrierName", "driverId", "driverName",
	"commodityId", "commodityName", "deliveryDateISO", "pickupPostcode", "dropoffPostcode", "weight", "weightNet",
	"weightUnit", "ticketNumber", "vehicleRegistration", "status", "tags",
}

// CSVRow is a load as a row under CSVHeader; tags are ";"-separated, absent
// weights and parties are empty cells.
func CSVRow(l *Load) []string {
	var carrier, driver Party
	if l.Carrier != nil {
		carrier = *l.Carrier
	}
	if l.Driver != nil {
		driver = *l.Driver
	}
	return []string{
		l.ID, l.Reference, l.Organiser.ID, l.Organiser.Name, carrier.ID, carrier.Name, driver.ID, driver.Name,
		strconv.Itoa(l.Commodity.ID), l.Commodity.Name, l.DeliveryDateISO, l.PickupPostcode, l.DropoffPostcode,
		formatWeight(l.Weight), formatWeight(l.WeightNet), l.Commodity.Unit, l.TicketNumber, l.VehicleRegistration,
		string(l.Status), strings.Join(l.Tags, tagSeparator),
	}
}

func formatWeight(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

func (h *Handler) byIDs(c *gin.Context) error {
	q := httpx.NewQuery(c)
	q.RequiredString("ids")
	ids := q.Strings("ids")
	if err := q.Err(); err != nil {
		return err
	}
	loads, err := h.svc.ByIDs(c.Request.Context(), auth.FromContext(c), ids)
	if err != nil {
		return err
	}
	c.Header(httpx.HeaderTotalCount, strconv.Itoa(len(loads)))
	c.JSON(http.StatusOK, loads)
	return nil
}

func (h *Handler) get(c *gin.Context) error {
	l, err := h.svc.Get(c.Request.Context(), auth.FromContext(c), c.Param("id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, l)
	return nil
}

// bindList decodes an array body (a single object is taken as a list of one).
func bindList[T any](c *gin.Context, max int) ([]T, error) {
	items, _, err := httpx.BindOneOrMany[T](c, max)
	return items, err
}

func (h *Handler) sendToDriver(c *gin.Context) error {
	items, err := bindList[DriverAssignment](c, h.maxItems)
	if err != nil {
		return err
	}
	n, err := h.svc.SendToDriver(c.Request.Context(), auth.FromContext(c), items)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, confirmation(n, "sent to the driver"))
	return nil
}

func (h *Handler) sendToCarrier(c *gin.Context) error {
	items, err := bindList[CarrierAssignment](c, h.maxItems)
	if err != nil {
		return err
	}
	n, err := h.svc.SendToCarrier(c.Request.Context(), auth.FromContext(c), items)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, confirmation(n, "sent to the carrier"))
	return nil
}

func confirmation(n int, what string) gin.H {
	noun := "loads were"
	if n == 1 {
		noun = "load was"
	}
	return gin.H{"status": "success", "message": strconv.Itoa(n) + " " + noun + " " + what}
}

func (h *Handler) proveDelivery(c *gin.Context) error {
	forms, err := bindList[ProofForm](c, h.maxItems)
	if err != nil {
		return err
	}
	loads, err := h.svc.ProveDelivery(c.Request.Context(), auth.FromContext(c), forms)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, loads)
	return nil
}

func (h *Handler) proveDeliveryOf(c *gin.Context) error {
	var form ProofForm
	if err := httpx.BindJSON(c, &form); err != nil {
		return err
	}
	l, err := h.svc.ProveDeliveryOf(c.Request.Context(), auth.FromContext(c), c.Param("id"), form)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, l)
	return nil
}
