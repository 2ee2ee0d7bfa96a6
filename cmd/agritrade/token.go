package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/config"
	"github.com/spf13/cobra"
)

func newToken(f *rootFlags) *cobra.Command {
	var (
		p     auth.Principal
		orgs  string
		roles string
		ttl   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Print an HS256 token signed with the configured secret (development, tests, scripts)",
		Example: `  agritrade token --sub U1 --name "Ann Smith" --org O1 --org-name "Smith Farms" --orgs O1,O2 --roles admin --ttl 1h
  agritrade token --sub U2 --org O2 --ttl -1h   # already expired`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(f.configFile)
			if err != nil {
				return err
			}
			if cfg.Auth.JWKSURL != "" {
				return fmt.Errorf("auth.jwks_url is set: tokens come from the OIDC provider, not from this command")
			}
			secret, err := auth.LoadOrCreateSecret(cfg.Auth.Secret, cfg.DataDir)
			if err != nil {
				return err
			}
			p.Orgs = splitComma(orgs)
			p.Roles = splitComma(roles)
			if p.UserID == "" {
				return fmt.Errorf("--sub is required")
			}
			tok, err := auth.Mint(secret, auth.MintOptions{Principal: p, TTL: ttl, Issuer: cfg.Auth.Issuer, Audience: cfg.Auth.Audience})
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&p.UserID, "sub", "", "user id (sub claim)")
	fl.StringVar(&p.Name, "name", "", "user's display name")
	fl.StringVar(&p.OrgID, "org", "", "current organisation id")
	fl.StringVar(&p.OrgName, "org-name", "", "current organisation name")
	fl.StringVar(&orgs, "orgs", "", "all organisation ids of the user, comma separated")
	fl.StringVar(&roles, "roles", "", "roles, comma separated: admin, expert, driver")
	fl.DurationVar(&ttl, "ttl", time.Hour, "lifetime; negative mints an already expired token")
	return cmd
}

func splitComma(s string) []string {
	out := []string{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
