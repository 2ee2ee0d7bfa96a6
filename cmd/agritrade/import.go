package main

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/agritrade/api/system"
	"github.com/spf13/cobra"
)

func newImport(f *rootFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "import", Short: "Load open data sets into the database"}
	cmd.AddCommand(&cobra.Command{
		Use:   "gazetteer FILE",
		Short: "Stream a GeoNames dump (places or postal codes; .txt, .zip or - for stdin) into the location gazetteer",
		Long: `Loads a GeoNames dump into the location gazetteer, streaming: memory stays bounded
whatever the size of the file. The format is detected from the column count: the
geoname table (allCountries.txt, GB.txt: 19 columns; populated places only) or the
postal code dump (GB.txt, GB_full.txt of the postal codes archive: 12 columns).
Rows are upserted, so a file may be imported again. Migrates the database first.`,
		Example: `  agritrade import gazetteer GB.zip
  agritrade import gazetteer allCountries.txt
  unzip -p GB_full.csv.zip | agritrade import gazetteer -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := openPlatform(ctx, f)
			if err != nil {
				return err
			}
			defer p.Close()
			mods := buildModules(p)
			if err := p.MigrateUp(ctx, mods); err != nil {
				return err
			}
			var sys *system.Module
			for _, m := range mods {
				if s, ok := m.(*system.Module); ok {
					sys = s
				}
			}
			if sys == nil {
				return errors.New("the system module is not built into this binary")
			}
			in, err := openDump(args[0], cmd.InOrStdin())
			if err != nil {
				return err
			}
			defer in.Close()
			out := cmd.OutOrStdout()
			st, err := sys.ImportGazetteer(ctx, in, out)
			for _, e := range st.FirstErrors {
				fmt.Fprintln(out, "  invalid:", e)
			}
			if err != nil {
				return fmt.Errorf("import %s: %w", args[0], err)
			}
			fmt.Fprintf(out, "imported %d rows (%s) in %s: %.0f rows/s; %d lines skipped, %d invalid; the gazetteer holds %d places and %d postcodes\n",
				st.Imported, st.Format, st.Duration.Round(1e6), st.RowsPerSecond(), st.Skipped, st.Invalid, st.Places, st.Postcodes)
			return nil
		},
	})
	return cmd
}

// openDump opens the file to import: "-" is standard input; a .zip archive
// (as GeoNames publishes them) is read from its data file, streamed.
func openDump(name string, stdin io.Reader) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(stdin), nil
	}
	if !strings.EqualFold(path.Ext(name), ".zip") {
		return os.Open(name)
	}
	z, err := zip.OpenReader(name)
	if err != nil {
		return nil, err
	}
	for _, e := range z.File {
		base := strings.ToLower(path.Base(e.Name))
		if e.FileInfo().IsDir() || base == "readme.txt" || !(strings.HasSuffix(base, ".txt") || strings.HasSuffix(base, ".csv")) {
			continue
		}
		r, err := e.Open()
		if err != nil {
			_ = z.Close()
			return nil, err
		}
		return struct {
			io.Reader
			io.Closer
		}{r, closeBoth{r, z}}, nil
	}
	_ = z.Close()
	return nil, fmt.Errorf("%s holds no .txt data file", name)
}

type closeBoth [2]io.Closer

func (c closeBoth) Close() error {
	err := c[0].Close()
	if err2 := c[1].Close(); err == nil {
		err = err2
	}
	return err
}
