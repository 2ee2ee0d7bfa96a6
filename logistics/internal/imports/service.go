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
	"github.com/sirupsen/logrus"
)

// BatchSize is how many rows go to the database together: large enough that a
// 100,000-row file takes 200 round trips, small enough that memory stays flat.
const BatchSize = 500

// maxDetailed is how many row results are reported one by one; after that,
// consecutive rows with the same outcome share one result ("1002-1500"), so
// that the answer to a huge file stays small.
const maxDetailed = 1000

// Row result statuses.
const (
	StatusSuccess    = "success"
	StatusValidation = "validation"
	StatusError      = "error"
)

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

// Import reads every row of r and upserts it, BatchSize rows at a time. Each
// row stands alone: rows that fail are reported and change nothing, and the
// batches before a failure stay applied. err is for a bad header (400) or an
// infrastructure failure.
func (s *Service) Import(ctx context.Context, p *auth.Principal, r RowReader, def Defaults) (*Result, error) {
	m, err := NewMapping(r.Header())
	if err != nil {
		return nil, err
	}
	res := &collector{}
	memo := map[int]*loads.Commodity{}
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
		outcomes, err := s.loads.Import(ctx, p, drafts, memo)
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
			break
		}
		if err != nil {
			// A file that cannot be read further: report where, keep what was applied.
			if ferr := flush(); ferr != nil {
				return nil, ferr
			}
			res.add(line, StatusError, []string{"the file could not be read from here on: " + readError(err)}, "the rest of the file was not read", "", "")
			break
		}
		if blank(row) {
			continue
		}
		d := m.Draft(row, def)
		if keys[d.Key()] {
			// A repeated reference updates what the earlier row wrote: write that first.
			if err := flush(); err != nil {
				return nil, err
			}
		}
		keys[d.Key()] = true
		batch = append(batch, pending{line: line, draft: d})
		if len(batch) == BatchSize {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	s.log.WithFields(logrus.Fields{"success": res.r.Success, "validation": res.r.Validation, "errors": res.r.Errors}).Info("batch upload done")
	return res.result(), nil
}

func readError(err error) string {
	if e, ok := apierr.As(err); ok {
		return e.Message
	}
	return err.Error()
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
	r Result
	// kind and count describe the last result: what it groups and how many rows.
	kind     string
	count    int
	lastLine int
}

func (c *collector) outcome(line int, reference string, o loads.ImportOutcome) {
	if o.Err != nil {
		status, summary := StatusError, "the row was not applied"
		if apierr.IsCode(o.Err, apierr.CodeValidation) {
			status, summary = StatusValidation, "the row failed validation"
		}
		c.add(line, status, Messages(o.Err), summary, "", reference)
		return
	}
	c.add(line, StatusSuccess, []string{}, fmt.Sprintf("load %s %s", reference, o.Action), o.ID, reference)
}

func (c *collector) add(line int, status string, messages []string, summary, id, reference string) {
	switch status {
	case StatusSuccess:
		c.r.Success++
	case StatusValidation:
		c.r.Validation++
	default:
		c.r.Errors++
	}
	kind := status + "/" + actionOf(summary)
	n := len(c.r.Results)
	if n > maxDetailed && kind == c.kind && line == c.lastLine+1 {
		last := &c.r.Results[n-1]
		c.count++
		first := strings.SplitN(last.Rows, "-", 2)[0]
		last.Rows = first + "-" + strconv.Itoa(line)
		last.ID, last.Reference = "", ""
		last.Summary = fmt.Sprintf("%d rows: %s", c.count, groupSummary(status, summary))
		c.lastLine = line
		return
	}
	c.r.Results = append(c.r.Results, RowResult{
		Rows: strconv.Itoa(line), Status: status, Message: messages, Summary: summary, ID: id, Reference: reference,
	})
	c.kind, c.count, c.lastLine = kind, 1, line
}

// actionOf is the last word of a success summary ("load X created" → "created").
func actionOf(summary string) string {
	return summary[strings.LastIndexByte(summary, ' ')+1:]
}

func groupSummary(status, summary string) string {
	if status == StatusSuccess {
		return "loads " + actionOf(summary)
	}
	return summary + " (the messages are those of the first row)"
}

func (c *collector) result() *Result {
	if c.r.Results == nil {
		c.r.Results = []RowResult{}
	}
	return &c.r
}
