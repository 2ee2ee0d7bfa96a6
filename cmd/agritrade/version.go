package main

import (
	"fmt"

	"github.com/agritrade/api/cmd/internal/buildinfo"
	"github.com/agritrade/api/livestock"
	"github.com/agritrade/api/logistics"
	"github.com/agritrade/api/system"
	"github.com/spf13/cobra"
)

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the build and every module's version",
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "build      %s\nsystem     %s\nlogistics  %s\nlivestock  %s\n",
				buildinfo.Version, system.Version, logistics.Version, livestock.Version)
		},
	}
}
