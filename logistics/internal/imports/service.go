package imports

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agritrade/api/logistics/internal/loads"
	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/logging"
	"github.com/agritrade/api/platform/tabular"
	"github.com/sirupsen/logrus"
)

// BatchSize is how many rows go to the database together: large enough that a
// 100,000-row file takes 200 round trips, small enough that memory stays flat.
const BatchSize = 500

// maxDetailed is how many row results are reported one by one; after that,
// consecutive rows with the same outcome share one result ("1002-1500"), so
// that the answer to a huge file stays small.
const maxDetailed = 1000

// Service runs batch uploads.
type Service struct {
	loads *loads.Service
	log   *logrus.Entry
}

// NewService wires the service over the loads service, which owns the rules.
func NewService(l *loads.Service, log *logrus.Entry) *Service {
	return &Service{loads: l, log: log}
}

type pending struct {
	line  int
	draft loads.Draft
}

// Import reads every row of r and upserts it, BatchSize rows at a time, in one
// transaction. Each row stands alone: rows that fail are reported and change
// nothing, the others apply. A file that cannot be read to its end (malformed,
// over the byte or row limit) fails the request and changes nothing. err is
// also for a bad header (400) and infrastructure failures.
func (s *Service) Import(ctx context.Context, p *auth.Principal, r tabular.Reader, def Defaults) (*tabular.Result, error) {
	m, err := NewMapping(r.Header())
	if err != nil {
		return nil, err
	}
	res := &collector{}
	err = s.loads.Import(ctx, p, func(ctx context.Context, imp *loads.Importer) error {
		batch := make([]pending, 0, BatchSize)
		keys := map[loads.Key]bool{}
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			drafts := make([]loads.Draft, len(batch))
			for i := range batch {
				drafts[i] = batch[i].draft
			}
			outcomes, err := imp.Upsert(ctx, drafts)
			if err != nil {
				return err
			}
			for i, o := range outcomes {
				res.outcome(batch[i].line, batch[i].draft.Reference, o)
			}
			batch = batch[:0]
			clear(keys)
			return nil
		}
		for {
			row, line, err := r.Next()
			if errors.Is(err, io.EOF) {
				return flush()
			}
			if err != nil {
				return err
			}
			if blank(row) {
				continue
			}
			d := m.Draft(row, def)
			if keys[d.Key()] {
				// A repeated reference updates what the earlier row wrote: write that first.
				if err := flush(); err != nil {
					return err
				}
			}
			keys[d.Key()] = true
			batch = append(batch, pending{line: line, draft: d})
			if len(batch) == BatchSize {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	logging.Ctx(ctx, s.log).WithFields(logrus.Fields{"success": res.r.Success, "validation": res.r.Validation, "errors": res.r.Errors}).Info("batch upload done")
	return res.result(), nil
}

func blank(row []string) bool {
	for _, c := range row {
		if strings.TrimSpace(c) != "" {
			return false
		}
	}
	return true
}

// collector builds the import result. Counts are always exact; row results
// are one per row up to maxDetailed, then consecutive rows with the same
// outcome share one result.
type collector struct {
	r tabular.Result
	// kind and count describe the last result: what it groups and how many rows.
	kind     string
	count    int
	lastLine int
}

func (c *collector) outcome(line int, reference string, o loads.ImportOutcome) {
	if o.Err != nil {
		status, summary := tabular.StatusError, "the row was not applied"
		if apierr.IsCode(o.Err, apierr.CodeValidation) {
			status, summary = tabular.StatusValidation, "the row failed validation"
		}
		c.add(line, status, Messages(o.Err), summary, "", reference)
		return
	}
	c.add(line, tabular.StatusSuccess, []string{}, fmt.Sprintf("load %s %s", reference, o.Action), o.ID, reference)
}

func (c *collector) add(line int, status string, messages []string, summary, id, reference string) {
	kind := status + "/" + actionOf(summary)
	n := len(c.r.Results)
	if n > maxDetailed && kind == c.kind && line == c.lastLine+1 {
		switch status { // counted here: Add counts the rows it appends
		case tabular.StatusSuccess:
			c.r.Success++
		case tabular.StatusValidation:
			c.r.Validation++
		default:
			c.r.Errors++
		}
		last := &c.r.Results[n-1]
		c.count++
		first := strings.SplitN(last.Rows, "-", 2)[0]
		last.Rows = first + "-" + strconv.Itoa(line)
		last.ID, last.Reference = "", ""
		last.Summary = fmt.Sprintf("%d rows: %s", c.count, groupSummary(status, summary))
		c.lastLine = line
		return
	}
	c.r.Add(tabular.RowResult{
		Rows: tabular.Line(line), Status: status, Message: messages, Summary: summary, ID: id, Reference: reference,
	})
	c.kind, c.count, c.lastLine = kind, 1, line
}

// actionOf is the last word of a success summary ("load X created" → "created").
func actionOf(summary string) string {
	return summary[strings.LastIndexByte(summary, ' ')+1:]
}

func groupSummary(status, summary string) string {
	if status == tabular.StatusSuccess {
		return "loads " + actionOf(summary)
	}
	return summary + " (the messages are those of the first row)"
}

func (c *collector) result() *tabular.Result {
	if c.r.Results == nil {
		c.r.Results = []tabular.RowResult{}
	}
	return &c.r
}
