package logistics

// TEMPORARY wiring until feat/files, feat/messaging and feat/refdata are merged:
// replaced by filestore, outbox.Enqueue and tabular.Open.

import (
	"context"
	"encoding/csv"
	"io"

	"github.com/agritrade/api/logistics/internal/imports"
	"github.com/agritrade/api/logistics/internal/loads"
	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/module"
	"github.com/uptrace/bun"
)

type noFiles struct{}

func (noFiles) Resolve(_ context.Context, _ *auth.Principal, refs []loads.FileRef) ([]loads.FileRef, []apierr.FieldError, error) {
	var f apierr.Fields
	for i := range refs {
		f.Index(i).Add("id", "not_found", "is not a file you can read", nil)
	}
	return nil, f.List(), nil
}

func files(module.Deps) loads.Files { return noFiles{} }

func enqueue(context.Context, bun.IDB, loads.Event) error { return nil }

type csvRows struct {
	r      *csv.Reader
	header []string
	line   int
}

func (c *csvRows) Header() []string { return c.header }
func (c *csvRows) Next() ([]string, int, error) {
	row, err := c.r.Read()
	c.line++
	return row, c.line, err
}
func (c *csvRows) Close() error { return nil }

func openRows(r io.Reader, _ string) (imports.RowReader, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	h, err := cr.Read()
	if err != nil {
		return nil, apierr.BadRequest("no header")
	}
	return &csvRows{r: cr, header: h, line: 1}, nil
}
