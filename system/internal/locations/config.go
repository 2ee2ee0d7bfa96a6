package locations

import (
	"time"

	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/system/internal/locations/outside"
)

// Config is the locations section of the configuration (locations.*,
// AGRITRADE_LOCATIONS_*): it selects the provider and configures the adapters
// of outside location services. The module owns its shape and defaults.
type Config struct {
	Provider string `mapstructure:"provider"`
	// NominatimURL and PhotonURL are the OSM geocoders' base URLs.
	NominatimURL string `mapstructure:"nominatim_url"`
	PhotonURL    string `mapstructure:"photon_url"`
	// ThreeWordURL is the three-word address service; it is used only when
	// ThreeWordKey is set.
	ThreeWordURL string `mapstructure:"three_word_url"`
	ThreeWordKey string `mapstructure:"three_word_key"`
	// MaxDistanceKm is how far a reverse lookup looks for the nearest place.
	MaxDistanceKm float64 `mapstructure:"max_distance_km"`

	outside.ClientConfig `mapstructure:",squash"`
}

// ReadConfig reads the locations section.
func ReadConfig(c *config.Config) (Config, error) {
	var lc Config
	err := c.Section("locations", map[string]any{
		"provider":        ProviderGazetteer,
		"nominatim_url":   "https://nominatim.openstreetmap.org",
		"photon_url":      "https://photon.komoot.io",
		"three_word_url":  "https://api.what3words.com",
		"three_word_key":  "",
		"user_agent":      "",
		"timeout":         5 * time.Second,
		"cache_ttl":       24 * time.Hour,
		"min_interval":    time.Second,
		"max_distance_km": 25.0,
	}, &lc)
	return lc, err
}
