// Package config loads the one typed configuration of the binary with viper:
// built-in defaults, then an optional agritrade.yaml, then AGRITRADE_* variables.
package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/viper"
)

// Config is the whole configuration; every key of ARCHITECTURE.md has a field.
type Config struct {
	HTTP      HTTP      `mapstructure:"http"`
	BaseURL   string    `mapstructure:"base_url"`
	DataDir   string    `mapstructure:"data_dir"`
	DB        DB        `mapstructure:"db"`
	Auth      Auth      `mapstructure:"auth"`
	Files     Files     `mapstructure:"files"`
	Cache     Cache     `mapstructure:"cache"`
	Redis     Redis     `mapstructure:"redis"`
	Bus       Bus       `mapstructure:"bus"`
	Log       Log       `mapstructure:"log"`
	Modules   Modules   `mapstructure:"modules"`
	Notify    Notify    `mapstructure:"notify"`
	RateLimit RateLimit `mapstructure:"ratelimit"`
	Otel      Otel      `mapstructure:"otel"`
	Events    Events    `mapstructure:"events"`
	Imports   Imports   `mapstructure:"imports"`
	// Idempotency keeps the answers of writes sent with Idempotency-Key.
	Idempotency Idempotency `mapstructure:"idempotency"`
	Runtime     Runtime     `mapstructure:"runtime"`
	Debug       bool        `mapstructure:"debug"`

	// v holds every key, for the sections modules own and read with Section.
	v *viper.Viper
}

// Otel configures OpenTelemetry tracing: off unless an OTLP/HTTP endpoint is
// named here or in the standard OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT variables.
type Otel struct {
	// Endpoint is the collector's OTLP/HTTP base URL (http://collector:4318).
	Endpoint string `mapstructure:"endpoint"`
	// ServiceName is the service.name of the spans (default agritrade).
	ServiceName string `mapstructure:"service_name"`
	// SampleRatio is the share of new traces recorded (0..1, default 0.1),
	// parent-based: a caller's sampled traceparent is always continued. The
	// standard OTEL_TRACES_SAMPLER, when set, replaces it.
	SampleRatio float64 `mapstructure:"sample_ratio"`
	// MaxTracesPerSecond bounds the new traces recorded per process
	// (default 100; 0: no bound), so that tracing's cost stops growing with
	// the traffic. A caller's sampled traceparent is always continued.
	MaxTracesPerSecond float64 `mapstructure:"max_traces_per_second"`
}

// Events configures the live event stream (GET /system/v1/events).
type Events struct {
	// Retention is how long events stay replayable with Last-Event-ID.
	Retention time.Duration `mapstructure:"retention"`
	// Heartbeat is the interval of the keep-alive comment lines.
	Heartbeat time.Duration `mapstructure:"heartbeat"`
	// MaxPerUser bounds one user's open streams per replica (429 above).
	MaxPerUser int `mapstructure:"max_per_user"`
	// MaxStreams bounds the open streams of one replica (503 above); each
	// stream is one of the http.max_conns connections, so it stays below that.
	MaxStreams int `mapstructure:"max_streams"`
}

// Imports bounds the spreadsheet imports (variety import, load batches).
type Imports struct {
	// MaxInFlight is how many imports one replica runs at once; more answer
	// 429 with Retry-After. 0 or less: no limit.
	MaxInFlight int `mapstructure:"max_in_flight"`
}

// Runtime tunes the Go runtime of the serve command.
type Runtime struct {
	// AdaptiveProcs lets GOMAXPROCS follow the load (platform/procs): one
	// processor while one is plenty, the runtime's default as soon as the
	// load needs more. Off: the runtime's default throughout. GOMAXPROCS set
	// in the environment wins either way.
	AdaptiveProcs bool `mapstructure:"adaptive_procs"`
}

// Idempotency configures the Idempotency-Key of authenticated writes
// (platform/idempotency).
type Idempotency struct {
	// TTL is how long an answer is kept and replayed.
	TTL time.Duration `mapstructure:"ttl"`
	// Lease is how long a request may hold its key without a sign of life
	// (it renews the lease while it runs): a key whose replica died mid-way
	// is taken over by a retry once the lease has passed.
	Lease time.Duration `mapstructure:"lease"`
	// PurgeInterval is how often each replica deletes the answers older than TTL.
	PurgeInterval time.Duration `mapstructure:"purge_interval"`
}

// HTTP configures the listener and request limits.
type HTTP struct {
	Addr            string        `mapstructure:"addr"`
	MaxBodyKB       int64         `mapstructure:"max_body_kb"`
	MaxListItems    int           `mapstructure:"max_list_items"`
	ShutdownTimeout time.Duration `mapstructure:"shutdown_timeout"`
	CORSOrigins     []string      `mapstructure:"cors_origins"`
	// ReadHeaderTimeout bounds the reading of a request's line and headers,
	// MaxHeaderKB their size.
	ReadHeaderTimeout time.Duration `mapstructure:"read_header_timeout"`
	MaxHeaderKB       int           `mapstructure:"max_header_kb"`
	// BodyIdleTimeout is the longest wait for the next bytes of a request
	// body; BodyMinRate (bytes per second) the least average rate of a body
	// over the time spent waiting for it, once BodyIdleTimeout has passed. A
	// slow upload that keeps moving is never cut; a stalled or dribbling one is.
	BodyIdleTimeout time.Duration `mapstructure:"body_idle_timeout"`
	BodyMinRate     int64         `mapstructure:"body_min_rate"`
	// WriteIdleTimeout is the longest a client may take to accept each
	// WriteChunkKB of a response: a stalled download is cut, a slow one is not.
	WriteIdleTimeout time.Duration `mapstructure:"write_idle_timeout"`
	// MaxConns caps the connections open at once; more wait in the listen
	// backlog. 0 or less: no cap.
	MaxConns int `mapstructure:"max_conns"`
	// PprofAddr, when set, serves Go's runtime profiles (/debug/pprof/) on a
	// listener of their own, never on Addr: profiles show internals, so bind
	// it to loopback or a private network. Empty (the default): off.
	PprofAddr string `mapstructure:"pprof_addr"`
}

// DB selects the database: a postgres:// DSN, or SQLite (empty or sqlite: DSN).
type DB struct {
	DSN          string `mapstructure:"dsn"`
	MaxOpenConns int    `mapstructure:"max_open_conns"`
	// MigrationLockWait bounds how long a start waits while another process
	// migrates (the lock dies with its holder, so waiting is always safe).
	MigrationLockWait time.Duration `mapstructure:"migration_lock_wait"`
}

// Auth selects HS256 with a shared secret or OIDC through a JWKS URL.
type Auth struct {
	Secret   string     `mapstructure:"secret"`
	JWKSURL  string     `mapstructure:"jwks_url"`
	Issuer   string     `mapstructure:"issuer"`
	Audience string     `mapstructure:"audience"`
	Claims   ClaimNames `mapstructure:"claims"`
	// Leeway is the clock skew tolerated on a token's exp, nbf and iat: a
	// token valid from (nbf) or issued (iat) further in the future is refused.
	Leeway time.Duration `mapstructure:"leeway"`
}

// ClaimNames maps the principal's fields to token claims (OIDC providers differ).
type ClaimNames struct {
	Name    string `mapstructure:"name"`
	Org     string `mapstructure:"org"`
	OrgName string `mapstructure:"org_name"`
	Orgs    string `mapstructure:"orgs"`
	Roles   string `mapstructure:"roles"`
}

// Files configures file storage.
type Files struct {
	Backend     string        `mapstructure:"backend"`
	MaxUploadMB int64         `mapstructure:"max_upload_mb"`
	URLTTL      time.Duration `mapstructure:"url_ttl"`
	// Dir is the local backend's directory; empty means <data_dir>/files.
	Dir string `mapstructure:"dir"`
	S3  S3     `mapstructure:"s3"`
	// SweepInterval is how often each replica removes the bytes of uploads
	// abandoned half-way (local temporary files, S3 multipart uploads) older
	// than TmpMaxAge. The S3 backend uses at least the longest an upload may
	// last under the body deadlines (filestore.SweepAge).
	SweepInterval time.Duration `mapstructure:"sweep_interval"`
	TmpMaxAge     time.Duration `mapstructure:"tmp_max_age"`
	// ResumableTTL is how long an unfinished resumable upload (tus, system's
	// /uploads) is kept after its creation; then its row and bytes go.
	ResumableTTL time.Duration `mapstructure:"resumable_ttl"`
	// ThumbSizes are the thumbnail sizes clients may ask for ("300x300"
	// crops to fill, "300x300f" fits inside, "600x0" and "0x400" keep the
	// ratio); ThumbMaxPixels refuses larger sources (decompression bombs);
	// ThumbConcurrency bounds the thumbnails one replica makes at once (each
	// holds a decoded source in memory).
	ThumbSizes       []string `mapstructure:"thumb_sizes"`
	ThumbMaxPixels   int64    `mapstructure:"thumb_max_pixels"`
	ThumbConcurrency int      `mapstructure:"thumb_concurrency"`
	// ThumbEager makes an image's thumbnails right after its upload.
	ThumbEager bool `mapstructure:"thumb_eager"`
}

// S3 configures an S3-compatible object store.
type S3 struct {
	Endpoint  string `mapstructure:"endpoint"`
	Bucket    string `mapstructure:"bucket"`
	AccessKey string `mapstructure:"access_key"`
	SecretKey string `mapstructure:"secret_key"`
	UseSSL    bool   `mapstructure:"use_ssl"`
	Region    string `mapstructure:"region"`
	// Prefix is prepended to every object key (several deployments can share a bucket).
	Prefix string `mapstructure:"prefix"`
	// PartSizeMB is the multipart part size: the memory one upload holds at a time (S3 minimum 5).
	PartSizeMB int64 `mapstructure:"part_size_mb"`
}

// Cache selects the cache backend and bounds it.
type Cache struct {
	Backend    string        `mapstructure:"backend"`
	TTL        time.Duration `mapstructure:"ttl"`
	MaxEntries int           `mapstructure:"max_entries"`
	MaxBytes   int64         `mapstructure:"max_bytes"`
	// Prefix namespaces the redis backend's keys; empty means
	// <redis.prefix>cache: (set only to keep an older explicit namespace).
	Prefix string `mapstructure:"prefix"`
}

// Redis locates the Redis server used by the redis backends.
type Redis struct {
	URL string `mapstructure:"url"`
	// Prefix is the deployment's namespace in Redis: the bus channel
	// (<prefix>bus), cache keys (<prefix>cache:) and rate-limit keys
	// (<prefix>ratelimit:) all live under it, so deployments sharing a Redis
	// never touch each other. Empty means derived from the database (see
	// DerivedRedisPrefix): every replica of a deployment shares its database.
	Prefix string `mapstructure:"prefix"`
}

// Bus selects the replica-to-replica broadcast.
type Bus struct {
	Backend string `mapstructure:"backend"`
}

// Log configures the loggers.
type Log struct {
	Format string `mapstructure:"format"`
	Level  string `mapstructure:"level"`
}

// ModuleLog is the start-up log setting of one module (runtime changes persist in the database).
type ModuleLog struct {
	Level  string `mapstructure:"level"`
	Filter string `mapstructure:"filter"`
}

// ModuleSettings holds one module's settings.
type ModuleSettings struct {
	Log ModuleLog `mapstructure:"log"`
}

// Modules holds every module's settings by name.
type Modules map[string]ModuleSettings

// Notify configures the notification channels of the outbox and its dispatcher.
type Notify struct {
	Webhook Webhook `mapstructure:"webhook"`
	SMTP    SMTP    `mapstructure:"smtp"`
	// MaxAttempts is how many delivery attempts an event gets before it is dead.
	MaxAttempts int `mapstructure:"max_attempts"`
	// BackoffBase is the delay after the first failure; it doubles per attempt.
	BackoffBase time.Duration `mapstructure:"backoff_base"`
	// BackoffMax caps the delay between attempts.
	BackoffMax time.Duration `mapstructure:"backoff_max"`
	// Lease is how long a claim lasts: a replica that dies holding one loses it after this.
	Lease time.Duration `mapstructure:"lease"`
	// PollInterval is how often an idle dispatcher looks for due events.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// Workers is how many events one replica delivers at the same time.
	Workers int `mapstructure:"workers"`
	// Retention is how long delivered events are kept before they are purged.
	Retention time.Duration `mapstructure:"retention"`
}

// Webhook is a signed HTTP notification channel.
type Webhook struct {
	URL     string        `mapstructure:"url"`
	Secret  string        `mapstructure:"secret"`
	Timeout time.Duration `mapstructure:"timeout"`
}

// SMTP is the e-mail notification channel.
type SMTP struct {
	Host     string `mapstructure:"host"`
	Port     int    `mapstructure:"port"`
	Username string `mapstructure:"username"`
	Password string `mapstructure:"password"`
	From     string `mapstructure:"from"`
	// To receives every event (comma-separated addresses) unless a route matches.
	To string `mapstructure:"to"`
	// Routes maps an event-type prefix ("expert.") to the addresses of that
	// channel (comma separated); the longest matching prefix wins over To.
	Routes  map[string]string `mapstructure:"routes"`
	Timeout time.Duration     `mapstructure:"timeout"`
}

// RateLimit configures per-client-IP limits of public routes.
type RateLimit struct {
	PerMinute int `mapstructure:"per_minute"`
	Burst     int `mapstructure:"burst"`
}

// DefaultFile is the configuration file read from the working directory when
// no file is named.
const DefaultFile = "agritrade.yaml"

// Load reads the configuration. file may be empty: then ./agritrade.yaml is used
// when it exists.
func Load(file string) (*Config, error) {
	v := viper.New()
	SetDefaults(v)
	v.SetEnvPrefix("AGRITRADE")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	if file == "" {
		// Only the exact name: viper's own search also takes extension-less
		// files, and would read the agritrade binary itself as YAML.
		if _, err := os.Stat(DefaultFile); err == nil {
			file = DefaultFile
		}
	}
	if file != "" {
		v.SetConfigFile(file)
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("read config %s: %w", file, err)
		}
	}
	c := Config{v: v}
	if err := v.Unmarshal(&c); err != nil {
		return nil, fmt.Errorf("decode config: %w", err)
	}
	c.HTTP.CORSOrigins = SplitList(c.HTTP.CORSOrigins)
	c.Files.ThumbSizes = SplitList(c.Files.ThumbSizes)
	c.Modules = c.Modules.withEnv(os.Environ())
	if err := c.finish(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Default returns the configuration with nothing but defaults, for tests and tools.
func Default() *Config {
	v := viper.New()
	SetDefaults(v)
	c := Config{v: v}
	if err := v.Unmarshal(&c); err != nil {
		panic(err) // defaults are compiled in: failing here is a programming error
	}
	if err := c.finish(); err != nil {
		panic(err)
	}
	return &c
}

// SetDefaults registers every key with its default so that environment variables
// reach keys that no file mentions.
func SetDefaults(v *viper.Viper) {
	v.SetDefault("http.addr", ":8080")
	v.SetDefault("http.max_body_kb", 1024)
	v.SetDefault("http.max_list_items", 1000)
	v.SetDefault("http.shutdown_timeout", 20*time.Second)
	v.SetDefault("http.cors_origins", []string{})
	v.SetDefault("http.read_header_timeout", 10*time.Second)
	v.SetDefault("http.max_header_kb", 64)
	v.SetDefault("http.body_idle_timeout", 60*time.Second)
	v.SetDefault("http.body_min_rate", 1024)
	v.SetDefault("http.write_idle_timeout", 60*time.Second)
	v.SetDefault("http.max_conns", 4096)
	v.SetDefault("http.pprof_addr", "")
	v.SetDefault("imports.max_in_flight", 2)
	v.SetDefault("runtime.adaptive_procs", true)
	v.SetDefault("base_url", "")
	v.SetDefault("data_dir", "./data")
	v.SetDefault("db.dsn", "")
	v.SetDefault("db.max_open_conns", 20)
	v.SetDefault("db.migration_lock_wait", 5*time.Minute)
	v.SetDefault("auth.secret", "")
	v.SetDefault("auth.jwks_url", "")
	v.SetDefault("auth.issuer", "")
	v.SetDefault("auth.audience", "")
	v.SetDefault("auth.claims.name", "name")
	v.SetDefault("auth.claims.org", "org")
	v.SetDefault("auth.claims.org_name", "orgName")
	v.SetDefault("auth.claims.orgs", "orgs")
	v.SetDefault("auth.claims.roles", "roles")
	v.SetDefault("auth.leeway", time.Minute)
	v.SetDefault("files.backend", "local")
	v.SetDefault("files.max_upload_mb", 100)
	v.SetDefault("files.url_ttl", time.Hour)
	v.SetDefault("files.s3.endpoint", "")
	v.SetDefault("files.s3.bucket", "agritrade")
	v.SetDefault("files.s3.access_key", "")
	v.SetDefault("files.s3.secret_key", "")
	v.SetDefault("files.s3.use_ssl", false)
	v.SetDefault("files.s3.region", "us-east-1")
	v.SetDefault("files.s3.prefix", "")
	v.SetDefault("files.s3.part_size_mb", 5)
	v.SetDefault("files.dir", "")
	v.SetDefault("files.sweep_interval", 10*time.Minute)
	v.SetDefault("files.tmp_max_age", time.Hour)
	v.SetDefault("files.resumable_ttl", 24*time.Hour)
	v.SetDefault("files.thumb_sizes", []string{"100x100", "300x300", "600x0", "1200x0"})
	v.SetDefault("files.thumb_max_pixels", 50_000_000)
	v.SetDefault("files.thumb_concurrency", 2)
	v.SetDefault("files.thumb_eager", true)
	v.SetDefault("cache.backend", "memory")
	v.SetDefault("cache.ttl", 10*time.Minute)
	v.SetDefault("cache.max_entries", 10000)
	v.SetDefault("cache.max_bytes", 64<<20)
	v.SetDefault("cache.prefix", "")
	v.SetDefault("redis.url", "redis://127.0.0.1:6379/0")
	v.SetDefault("redis.prefix", "")
	v.SetDefault("bus.backend", "")
	v.SetDefault("otel.endpoint", "")
	v.SetDefault("otel.service_name", "agritrade")
	v.SetDefault("otel.sample_ratio", 0.1)
	v.SetDefault("otel.max_traces_per_second", 100)
	v.SetDefault("idempotency.ttl", 24*time.Hour)
	v.SetDefault("idempotency.lease", time.Minute)
	v.SetDefault("idempotency.purge_interval", 10*time.Minute)
	v.SetDefault("events.retention", 24*time.Hour)
	v.SetDefault("events.heartbeat", 25*time.Second)
	v.SetDefault("events.max_per_user", 8)
	v.SetDefault("events.max_streams", 3000)
	v.SetDefault("log.format", "text")
	v.SetDefault("log.level", "info")
	v.SetDefault("notify.webhook.url", "")
	v.SetDefault("notify.webhook.secret", "")
	v.SetDefault("notify.webhook.timeout", 10*time.Second)
	v.SetDefault("notify.smtp.host", "")
	v.SetDefault("notify.smtp.port", 25)
	v.SetDefault("notify.smtp.username", "")
	v.SetDefault("notify.smtp.password", "")
	v.SetDefault("notify.smtp.from", "")
	v.SetDefault("notify.smtp.to", "")
	v.SetDefault("notify.smtp.routes", map[string]string{})
	v.SetDefault("notify.smtp.timeout", 30*time.Second)
	v.SetDefault("notify.max_attempts", 10)
	v.SetDefault("notify.backoff_base", 10*time.Second)
	v.SetDefault("notify.backoff_max", time.Hour)
	v.SetDefault("notify.lease", 2*time.Minute)
	v.SetDefault("notify.poll_interval", time.Second)
	v.SetDefault("notify.workers", 4)
	v.SetDefault("notify.retention", 7*24*time.Hour)
	v.SetDefault("ratelimit.per_minute", 120)
	v.SetDefault("ratelimit.burst", 30)
	v.SetDefault("debug", false)
}

func (c *Config) finish() error {
	if c.DataDir == "" {
		c.DataDir = "./data"
	}
	c.DataDir = filepath.Clean(c.DataDir)
	if c.BaseURL == "" {
		c.BaseURL = "http://localhost" + portOf(c.HTTP.Addr)
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.Bus.Backend == "" {
		c.Bus.Backend = "memory"
		if c.IsPostgres() {
			c.Bus.Backend = "postgres"
		}
	}
	if c.Modules == nil {
		c.Modules = Modules{}
	}
	return c.validate()
}

// validate refuses settings that cannot work, naming the key.
func (c *Config) validate() error {
	var bad []string
	if c.Files.ThumbMaxPixels <= 0 {
		bad = append(bad, fmt.Sprintf("files.thumb_max_pixels %d: must be positive", c.Files.ThumbMaxPixels))
	}
	if c.Files.ThumbConcurrency <= 0 {
		bad = append(bad, fmt.Sprintf("files.thumb_concurrency %d: must be positive", c.Files.ThumbConcurrency))
	}
	if c.Files.SweepInterval <= 0 {
		bad = append(bad, fmt.Sprintf("files.sweep_interval %s: must be positive", c.Files.SweepInterval))
	}
	// A live upload's temporary file is written at least once per
	// body_idle_timeout; twice that leaves room for the last write, the
	// fsync and clock skew between replicas sharing the directory.
	if minAge := 2 * c.HTTP.BodyIdleTimeout; c.Files.TmpMaxAge <= 0 || c.Files.TmpMaxAge < minAge {
		bad = append(bad, fmt.Sprintf("files.tmp_max_age %s: must be positive and at least twice http.body_idle_timeout (%s)", c.Files.TmpMaxAge, c.HTTP.BodyIdleTimeout))
	}
	if c.Files.ResumableTTL <= 0 {
		bad = append(bad, fmt.Sprintf("files.resumable_ttl %s: must be positive", c.Files.ResumableTTL))
	}
	if c.Otel.SampleRatio < 0 || c.Otel.SampleRatio > 1 {
		bad = append(bad, fmt.Sprintf("otel.sample_ratio %g: must be between 0 and 1", c.Otel.SampleRatio))
	}
	if c.Otel.MaxTracesPerSecond < 0 {
		bad = append(bad, fmt.Sprintf("otel.max_traces_per_second %g: must be 0 (no bound) or more", c.Otel.MaxTracesPerSecond))
	}
	if len(bad) > 0 {
		return fmt.Errorf("invalid configuration: %s", strings.Join(bad, "; "))
	}
	return nil
}

// Namespaces fills the Redis names left empty: redis.prefix from the database
// (DerivedRedisPrefix), cache.prefix under it. The platform calls it when it
// opens, after every other setting is final.
func (c *Config) Namespaces() {
	if c.Redis.Prefix == "" {
		c.Redis.Prefix = DerivedRedisPrefix(c.DB.DSN, c.DataDir)
	}
	if c.Cache.Prefix == "" {
		c.Cache.Prefix = c.Redis.Prefix + "cache:"
	}
}

// DerivedRedisPrefix is the default redis.prefix: "agritrade:" and a short
// hash of the deployment's database (host, port and name of a PostgreSQL DSN,
// without credentials or options; the host name and data directory of an
// embedded SQLite file), and ":". Replicas of one deployment share a database
// and so a prefix; two deployments on different databases get different ones
// without any configuration. Set redis.prefix when replicas reach one
// database through different addresses (a pooler beside a direct DSN).
func DerivedRedisPrefix(dsn, dataDir string) string {
	id := "sqlite:" + hostName() + ":" + absPath(dataDir)
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		port := u.Port()
		if port == "" {
			port = "5432"
		}
		id = "postgres:" + strings.ToLower(u.Hostname()) + ":" + port + "/" + strings.TrimPrefix(u.Path, "/")
	} else if dsn != "" {
		id = "sqlite:" + hostName() + ":" + absPath(strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite://"), "sqlite:"))
	}
	sum := sha256.Sum256([]byte(id))
	return "agritrade:" + hex.EncodeToString(sum[:4]) + ":"
}

func hostName() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// IsPostgres tells whether the configured database is PostgreSQL.
func (c *Config) IsPostgres() bool {
	return strings.HasPrefix(c.DB.DSN, "postgres://") || strings.HasPrefix(c.DB.DSN, "postgresql://")
}

// Section decodes the section key (locations, shortlinks...) into out: the
// module that owns a section declares its shape and defaults, the platform
// only reads it. defaults are registered first (key.name → value), so that
// AGRITRADE_<KEY>_<NAME> reaches keys that no file mentions; a comma-separated
// environment value fills a list, like the platform's own lists.
func (c *Config) Section(key string, defaults map[string]any, out any) error {
	for k, d := range defaults {
		c.v.SetDefault(key+"."+k, d)
	}
	// Viper's UnmarshalKey ignores the environment below the key: copy the
	// section key by key (Get consults every source) and decode that.
	sub := viper.New()
	for _, k := range c.v.AllKeys() {
		if name, ok := strings.CutPrefix(k, key+"."); ok {
			sub.Set(name, c.v.Get(k))
		}
	}
	if err := sub.Unmarshal(out); err != nil {
		return fmt.Errorf("decode config %s: %w", key, err)
	}
	return nil
}

// Set overrides one key (tests and tools): what a file or the environment
// would say, for a section a module reads with Section.
func (c *Config) Set(key string, value any) { c.v.Set(key, value) }

// withEnv adds the module log settings of the environment
// (AGRITRADE_MODULES_<NAME>_LOG_LEVEL and _FILTER) over those of the file: the
// module names come from the variables, the platform knows no list of them.
func (m Modules) withEnv(environ []string) Modules {
	if m == nil {
		m = Modules{}
	}
	for _, kv := range environ {
		k, val, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(k, "AGRITRADE_MODULES_")
		if !ok || val == "" { // viper too ignores empty variables
			continue
		}
		for suffix, set := range map[string]func(*ModuleLog){
			"_LOG_LEVEL":  func(l *ModuleLog) { l.Level = val },
			"_LOG_FILTER": func(l *ModuleLog) { l.Filter = val },
		} {
			if name, ok := strings.CutSuffix(rest, suffix); ok && name != "" {
				name = strings.ToLower(name)
				s := m[name]
				set(&s.Log)
				m[name] = s
			}
		}
	}
	return m
}

// ModuleLog returns the configured start-up log setting of a module.
func (c *Config) ModuleLog(name string) ModuleLog {
	return c.Modules[name].Log
}

func portOf(addr string) string {
	if i := strings.LastIndex(addr, ":"); i >= 0 {
		return addr[i:]
	}
	return ":8080"
}

// SplitList turns a single comma-separated value (as environment variables
// give lists) into its elements.
func SplitList(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		for _, part := range strings.Split(s, ",") {
			if p := strings.TrimSpace(part); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}
