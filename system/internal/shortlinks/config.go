package shortlinks

import "github.com/agritrade/api/platform/config"

// Config is the shortlinks section of the configuration (shortlinks.*,
// AGRITRADE_SHORTLINKS_*): the module owns its shape and defaults.
type Config struct {
	Templates    []LinkTemplate `mapstructure:"templates"`
	AllowedHosts []string       `mapstructure:"allowed_hosts"`
}

// LinkTemplate is a named short-link template (shortlinks.templates[]).
type LinkTemplate struct {
	Name        string `mapstructure:"name"`
	BaseURL     string `mapstructure:"base_url"`
	UTMSource   string `mapstructure:"utm_source"`
	UTMMedium   string `mapstructure:"utm_medium"`
	UTMCampaign string `mapstructure:"utm_campaign"`
}

// ReadConfig reads the shortlinks section.
func ReadConfig(c *config.Config) (Config, error) {
	var sc Config
	err := c.Section("shortlinks", map[string]any{
		"templates":     []map[string]any{},
		"allowed_hosts": []string{},
	}, &sc)
	sc.AllowedHosts = config.SplitList(sc.AllowedHosts)
	return sc, err
}
