// Package outside holds the adapters of outside location services: the OSM
// geocoders Nominatim and Photon and the three-word address service, over one
// client (outside.go) that paces, bounds and caches their calls.
package outside

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/system/internal/locations/place"
)

// maxAnswerBytes caps what is read of an outside service's answer.
const maxAnswerBytes = 2 << 20

// Client is what the adapters of outside services share: one HTTP client
// with the configured timeout and user agent, and an answer cache.
type Client struct {
	client    *http.Client
	userAgent string
	cache     *ttlCache
	// interval is the least time between two requests to one service
	// (Nominatim's usage policy: one request a second).
	interval time.Duration
	// maxWait is how long a request may queue for its turn before the API
	// answers 503 instead.
	maxWait time.Duration
}

// ClientConfig is the part of the locations section the client reads.
type ClientConfig struct {
	// UserAgent identifies the API to outside services (Nominatim requires one).
	UserAgent string `mapstructure:"user_agent"`
	// Timeout bounds each request to an outside service.
	Timeout time.Duration `mapstructure:"timeout"`
	// CacheTTL is how long answers of outside services are kept.
	CacheTTL time.Duration `mapstructure:"cache_ttl"`
	// MinInterval spaces requests to one OSM geocoder (Nominatim: 1 s).
	MinInterval time.Duration `mapstructure:"min_interval"`
}

// NewClient builds the client the adapters share from the locations section;
// baseURL names the API in the default user agent, transport carries the calls
// (nil: the default; the platform passes its tracing transport).
func NewClient(lc ClientConfig, baseURL string, transport http.RoundTripper) *Client {
	timeout := lc.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ua := lc.UserAgent
	if ua == "" {
		ua = "AgriTrade-API/1.0 (+" + baseURL + ")"
	}
	ttl := lc.CacheTTL
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	return &Client{
		client:    &http.Client{Timeout: timeout, Transport: transport},
		userAgent: ua,
		cache:     newTTLCache(ttl, 10000),
		interval:  lc.MinInterval,
		maxWait:   timeout,
	}
}

// answer is an outside service's raw reply.
type answer struct {
	status int
	body   []byte
}

// get sends one GET after the pacer allows it. Transport failures, timeouts,
// 429 and 5xx answers become 503 unavailable (with the service's Retry-After
// when it sends one); other statuses are for the adapter to interpret.
func (o *Client) get(ctx context.Context, p *pacer, source, url string, header http.Header) (answer, error) {
	if err := p.wait(ctx, source); err != nil {
		return answer{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return answer{}, apierr.Internal(err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("User-Agent", o.userAgent)
	req.Header.Set("Accept", "application/json")
	res, err := o.client.Do(req)
	if err != nil {
		// The error text holds the URL, never a key: keys travel in headers.
		return answer{}, apierr.Unavailable(err, "the "+source+" service")
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxAnswerBytes))
	if err != nil {
		return answer{}, apierr.Unavailable(err, "the "+source+" service")
	}
	if res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500 {
		e := apierr.Unavailable(fmt.Errorf("%s answered %d", source, res.StatusCode), "the "+source+" service")
		if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && ra > 0 {
			e.RetryAfter = ra
		}
		return answer{}, e
	}
	return answer{status: res.StatusCode, body: body}, nil
}

// cached answers dst from the cache under key, or fills it with fill and
// keeps it. Only successful answers are kept.
func (o *Client) cached(key string, dst any, fill func() error) error {
	if b, ok := o.cache.Get(key); ok {
		if err := json.Unmarshal(b, dst); err == nil {
			return nil
		}
	}
	if err := fill(); err != nil {
		return err
	}
	if b, err := json.Marshal(dst); err == nil {
		o.cache.Set(key, b)
	}
	return nil
}

// decodeAnswer unmarshals a 200 answer; anything else is a failure of the
// service (its answers are not the client's fault).
func decodeAnswer(source string, a answer, dst any) error {
	if a.status != http.StatusOK {
		return apierr.Unavailable(fmt.Errorf("%s answered %d: %s", source, a.status, place.Truncate(string(a.body), 200)), "the "+source+" service")
	}
	if err := json.Unmarshal(a.body, dst); err != nil {
		return apierr.Unavailable(fmt.Errorf("%s answered unreadable JSON: %w", source, err), "the "+source+" service")
	}
	return nil
}

// pacer spaces the requests to one outside service at least interval apart,
// queueing callers in arrival order. A caller whose turn is further away than
// maxWait gets 503 at once instead of piling up.
type pacer struct {
	interval time.Duration
	maxWait  time.Duration
	mu       sync.Mutex
	next     time.Time
	now      func() time.Time
	sleep    func(ctx context.Context, d time.Duration) error
}

func newPacer(interval, maxWait time.Duration) *pacer {
	return &pacer{interval: interval, maxWait: maxWait, now: time.Now, sleep: sleepCtx}
}

func (p *pacer) wait(ctx context.Context, source string) error {
	if p.interval <= 0 {
		return nil
	}
	p.mu.Lock()
	now := p.now()
	slot := p.next
	if slot.Before(now) {
		slot = now
	}
	d := slot.Sub(now)
	if d > p.maxWait {
		p.mu.Unlock()
		e := apierr.Unavailable(errors.New("request queue to "+source+" is full"), "the "+source+" service")
		e.RetryAfter = int(math.Ceil(d.Seconds()))
		return e
	}
	p.next = slot.Add(p.interval)
	p.mu.Unlock()
	if d <= 0 {
		return nil
	}
	if err := p.sleep(ctx, d); err != nil {
		return apierr.Unavailable(err, "the "+source+" service")
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ttlCache is a small in-process answer cache: entries expire after ttl and
// the least recently used go first beyond max entries.
type ttlCache struct {
	ttl   time.Duration
	max   int
	now   func() time.Time
	mu    sync.Mutex
	items map[string]*list.Element
	order *list.List
}

type cacheEntry struct {
	key     string
	value   []byte
	expires time.Time
}

func newTTLCache(ttl time.Duration, max int) *ttlCache {
	return &ttlCache{ttl: ttl, max: max, now: time.Now, items: map[string]*list.Element{}, order: list.New()}
}

// Get answers a live entry.
func (c *ttlCache) Get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if !c.now().Before(e.expires) {
		c.order.Remove(el)
		delete(c.items, key)
		return nil, false
	}
	c.order.MoveToFront(el)
	return e.value, true
}

// Set keeps an entry for the cache's ttl.
func (c *ttlCache) Set(key string, value []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		e := el.Value.(*cacheEntry)
		e.value, e.expires = value, c.now().Add(c.ttl)
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, value: value, expires: c.now().Add(c.ttl)})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cacheEntry).key)
	}
}

// Len is the number of entries held.
func (c *ttlCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
