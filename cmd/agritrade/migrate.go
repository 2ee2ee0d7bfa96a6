package main

import (
	"fmt"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/db"
	"github.com/spf13/cobra"
)

func newMigrate(f *rootFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "migrate", Short: "Apply, roll back or list database migrations"}
	cmd.AddCommand(&cobra.Command{
		Use:   "up",
		Short: "Apply every pending migration (platform first, then each module)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := openPlatform(cmd.Context(), f)
			if err != nil {
				return err
			}
			defer p.Close()
			if err := p.MigrateUp(cmd.Context(), buildModules(p)); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "migrations are up to date")
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "down [set]",
		Short: "Roll back the last migration group of one set (platform, system, logistics, livestock)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := openPlatform(cmd.Context(), f)
			if err != nil {
				return err
			}
			defer p.Close()
			sets, err := app.MigrationSets(buildModules(p))
			if err != nil {
				return err
			}
			for _, s := range sets {
				if s.Name != args[0] {
					continue
				}
				g, err := db.MigrateDown(cmd.Context(), p.DB, s.Name, s.Migrations)
				if err != nil {
					return err
				}
				if g.IsZero() {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: nothing to roll back\n", s.Name)
					return nil
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: rolled back %s\n", s.Name, g.Migrations.String())
				return nil
			}
			return fmt.Errorf("no migration set %q", args[0])
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "List applied and pending migrations of every set",
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := openPlatform(cmd.Context(), f)
			if err != nil {
				return err
			}
			defer p.Close()
			sets, err := app.MigrationSets(buildModules(p))
			if err != nil {
				return err
			}
			for _, s := range sets {
				applied, pending, err := db.Status(cmd.Context(), p.DB, s.Name, s.Migrations)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%-10s applied: %-3d pending: %d", s.Name, len(applied), len(pending))
				if len(pending) > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "  (%s)", pending.String())
				}
				fmt.Fprintln(cmd.OutOrStdout())
			}
			return nil
		},
	})
	return cmd
}
