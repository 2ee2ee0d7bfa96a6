package gazetteer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/system/internal/locations/place"
	"github.com/uptrace/bun"
)

// GeoNames dump formats, told apart by their column count.
const (
	// FormatPlaces is the geoname table (allCountries.txt, GB.txt...): 19 columns.
	FormatPlaces = "geonames-places"
	// FormatPostcodes is the postal code dump (GB.txt of the postal codes
	// archive, allCountries.txt there too): 12 columns.
	FormatPostcodes = "geonames-postcodes"

	placeColumns    = 19
	postcodeColumns = 12
)

// Import tuning: rows per INSERT, INSERTs per transaction, the longest line
// read (longer ones are skipped as invalid, keeping memory bounded).
const (
	importBatch       = 1000
	importTxBatches   = 10
	maxImportLineSize = 1 << 20
)

// ImportStats reports an import.
type ImportStats struct {
	Format string
	// Lines is every data line read; Imported the rows written; Skipped the
	// lines deliberately left out (not populated places); Invalid the lines
	// that could not be read.
	Lines, Imported, Skipped, Invalid int
	// FirstErrors holds the first few invalid lines' problems.
	FirstErrors []string
	Duration    time.Duration
	// Places and Postcodes are the gazetteer's totals afterwards.
	Places, Postcodes int
}

// RowsPerSecond is the import's rate.
func (s ImportStats) RowsPerSecond() float64 {
	if s.Duration <= 0 {
		return 0
	}
	return float64(s.Imported) / s.Duration.Seconds()
}

// Importer streams GeoNames dumps into the gazetteer: one line in memory at a
// time plus one batch of rows, whatever the size of the file.
type Importer struct {
	store *Store
	// Progress, when set, receives a line every ProgressEvery rows.
	Progress      io.Writer
	ProgressEvery int
}

// NewImporter builds an importer over the gazetteer's store.
func NewImporter(store *Store) *Importer {
	return &Importer{store: store, ProgressEvery: 100000}
}

// Import reads r to its end. The format is detected from the first data
// line's column count. Rows are upserted by id, so importing a file twice
// changes nothing the second time. Each transaction commits importTxBatches
// batches: an interrupted import keeps what it committed, and running it again
// completes it.
func (im *Importer) Import(ctx context.Context, r io.Reader) (ImportStats, error) {
	start := time.Now()
	st := ImportStats{}
	lines := newLineReader(r, maxImportLineSize)
	conn, release, err := im.store.BulkConn(ctx)
	if err != nil {
		return st, err
	}
	defer release()
	var (
		places    []placeRow
		postcodes []postcodeRow
		pending   int // batches written in the open transaction
		tx        *bun.Tx
	)
	commit := func() error {
		if tx == nil {
			return nil
		}
		err := tx.Commit()
		tx, pending = nil, 0
		return err
	}
	defer func() {
		if tx != nil {
			_ = tx.Rollback()
		}
	}()
	flush := func() error {
		if len(places) == 0 && len(postcodes) == 0 {
			return nil
		}
		if tx == nil {
			t, err := conn.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			tx = &t
		}
		if err := im.store.UpsertPlaces(ctx, tx, places); err != nil {
			return err
		}
		if err := im.store.UpsertPostcodes(ctx, tx, postcodes); err != nil {
			return err
		}
		st.Imported += len(places) + len(postcodes)
		places, postcodes = places[:0], postcodes[:0]
		if pending++; pending >= importTxBatches {
			return commit()
		}
		return nil
	}
	invalid := func(n int, err error) {
		st.Invalid++
		if len(st.FirstErrors) < 10 {
			st.FirstErrors = append(st.FirstErrors, fmt.Sprintf("line %d: %v", n, err))
		}
	}
	nextReport := im.ProgressEvery
	for {
		line, n, err := lines.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, errLineTooLong) {
			invalid(n, err)
			continue
		}
		if err != nil {
			return st, fmt.Errorf("read line %d: %w", n, err)
		}
		if len(bytes.TrimSpace(line)) == 0 || line[0] == '#' {
			continue
		}
		st.Lines++
		cols := strings.Split(string(line), "\t")
		if st.Format == "" {
			switch len(cols) {
			case placeColumns:
				st.Format = FormatPlaces
			case postcodeColumns:
				st.Format = FormatPostcodes
			default:
				return st, fmt.Errorf("line %d has %d tab-separated columns: want %d (GeoNames places) or %d (GeoNames postal codes)", n, len(cols), placeColumns, postcodeColumns)
			}
		}
		switch st.Format {
		case FormatPlaces:
			p, keep, err := ParsePlaceLine(cols)
			switch {
			case err != nil:
				invalid(n, err)
			case !keep:
				st.Skipped++
			default:
				places = append(places, p)
			}
		case FormatPostcodes:
			p, err := ParsePostcodeLine(cols)
			if err != nil {
				invalid(n, err)
			} else {
				postcodes = append(postcodes, p)
			}
		}
		if len(places)+len(postcodes) >= importBatch {
			if err := flush(); err != nil {
				return st, err
			}
		}
		if im.Progress != nil && im.ProgressEvery > 0 && st.Lines >= nextReport {
			nextReport += im.ProgressEvery
			el := time.Since(start)
			fmt.Fprintf(im.Progress, "%d lines read, %d rows imported (%.0f rows/s)\n", st.Lines, st.Imported, float64(st.Imported)/el.Seconds())
		}
		if err := ctx.Err(); err != nil {
			return st, err
		}
	}
	if st.Format == "" {
		return st, errors.New("the file holds no data lines")
	}
	if err := flush(); err != nil {
		return st, err
	}
	if err := commit(); err != nil {
		return st, err
	}
	// Counts and missing districts are set-based statements over the whole
	// gazetteer, in one transaction.
	if err := db.InTx(ctx, im.store.DB(), func(ctx context.Context, tx bun.Tx) error {
		return im.store.RefreshCounts(ctx, tx)
	}); err != nil {
		return st, err
	}
	if err := im.store.Analyze(ctx); err != nil {
		return st, err
	}
	st.Duration = time.Since(start)
	st.Places, st.Postcodes, err = im.store.Counts(ctx)
	return st, err
}

// ParsePlaceLine reads one line of the GeoNames geoname table. keep is false
// for features that are not populated places (feature class P).
func ParsePlaceLine(cols []string) (row placeRow, keep bool, err error) {
	if len(cols) != placeColumns {
		return row, false, fmt.Errorf("%d columns, want %d", len(cols), placeColumns)
	}
	if cols[6] != "P" {
		return row, false, nil
	}
	id, err := strconv.ParseInt(cols[0], 10, 64)
	if err != nil || id <= 0 {
		return row, false, fmt.Errorf("geonameid %q is not a positive integer", place.Truncate(cols[0], 20))
	}
	name := strings.TrimSpace(cols[1])
	if name == "" || len(name) > 200 || place.Normalize(name) == "" {
		return row, false, fmt.Errorf("name %q is empty or too long", place.Truncate(name, 20))
	}
	lat, lon, err := parseLatLon(cols[4], cols[5])
	if err != nil {
		return row, false, err
	}
	country, ok := place.CountryCode(cols[8])
	if !ok {
		return row, false, fmt.Errorf("country code %q is not ISO 3166-1 alpha-2", place.Truncate(cols[8], 8))
	}
	var pop int64
	if s := strings.TrimSpace(cols[14]); s != "" {
		if pop, err = strconv.ParseInt(s, 10, 64); err != nil || pop < 0 {
			return row, false, fmt.Errorf("population %q is not a number", place.Truncate(s, 20))
		}
	}
	regionISO, regionName := geonamesRegion(country, cols[10], "")
	row = newPlaceRow("gn:"+strconv.FormatInt(id, 10), name, placeKind(cols[7], pop), country, regionISO, regionName, lat, lon, pop)
	return row, true, nil
}

// ParsePostcodeLine reads one line of the GeoNames postal code dump.
func ParsePostcodeLine(cols []string) (postcodeRow, error) {
	if len(cols) != postcodeColumns {
		return postcodeRow{}, fmt.Errorf("%d columns, want %d", len(cols), postcodeColumns)
	}
	country, ok := place.CountryCode(cols[0])
	if !ok {
		return postcodeRow{}, fmt.Errorf("country code %q is not ISO 3166-1 alpha-2", place.Truncate(cols[0], 8))
	}
	pc, ok := place.ParsePostcode(country, cols[1])
	if !ok {
		return postcodeRow{}, fmt.Errorf("postal code %q is not a %s postcode", place.Truncate(cols[1], 20), country)
	}
	lat, lon, err := parseLatLon(cols[9], cols[10])
	if err != nil {
		return postcodeRow{}, err
	}
	placeName := strings.TrimSpace(cols[2])
	if len(placeName) > 200 {
		return postcodeRow{}, errors.New("place name is too long")
	}
	regionISO, regionName := geonamesRegion(country, cols[4], strings.TrimSpace(cols[3]))
	return newPostcodeRow(pc, placeName, country, regionISO, regionName, lat, lon), nil
}

func parseLatLon(latS, lonS string) (float64, float64, error) {
	lat, err1 := strconv.ParseFloat(strings.TrimSpace(latS), 64)
	lon, err2 := strconv.ParseFloat(strings.TrimSpace(lonS), 64)
	if err1 != nil || err2 != nil || math.IsNaN(lat) || math.IsNaN(lon) || lat < -90 || lat > 90 || lon < -180 || lon > 180 {
		return 0, 0, fmt.Errorf("coordinates %q,%q are not a valid point", place.Truncate(latS, 20), place.Truncate(lonS, 20))
	}
	return lat, lon, nil
}

// geonamesAdmin1 maps GeoNames first-level admin codes to ISO 3166-2 where
// they correspond: the UK nations and the Irish provinces.
var geonamesAdmin1 = map[string][2]string{
	"GB.ENG": {"GB-ENG", "England"},
	"GB.SCT": {"GB-SCT", "Scotland"},
	"GB.WLS": {"GB-WLS", "Wales"},
	"GB.NIR": {"GB-NIR", "Northern Ireland"},
	"IE.C":   {"IE-C", "Connacht"},
	"IE.L":   {"IE-L", "Leinster"},
	"IE.M":   {"IE-M", "Munster"},
	"IE.U":   {"IE-U", "Ulster"},
}

// geonamesRegion answers the region of an admin1 code: its ISO 3166-2 code
// and name when known, else no code and the dump's own name.
func geonamesRegion(country, admin1, name string) (string, string) {
	if r, ok := geonamesAdmin1[country+"."+strings.TrimSpace(admin1)]; ok {
		return r[0], r[1]
	}
	return "", place.Truncate(name, 100)
}

// placeKind classes a populated place from its GeoNames feature code and size.
func placeKind(code string, pop int64) string {
	switch {
	case code == "PPLX":
		return "locality"
	case code == "PPLC" || pop >= 100000:
		return "city"
	case pop >= 5000 || strings.HasPrefix(code, "PPLA"):
		return "town"
	default:
		return "village"
	}
}

// errLineTooLong marks a line over the reader's limit (its rest is skipped).
var errLineTooLong = errors.New("line too long")

// lineReader reads lines of at most max bytes, so that a file without line
// breaks cannot exhaust memory.
type lineReader struct {
	r   *bufio.Reader
	max int
	n   int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next answers the next line without its line break, and its number.
func (l *lineReader) Next() ([]byte, int, error) {
	l.buf = l.buf[:0]
	l.n++
	tooLong := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !tooLong {
			if len(l.buf)+len(chunk) > l.max+1 {
				tooLong = true
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(l.buf) == 0 && !tooLong {
				return nil, l.n, io.EOF
			}
		case err != nil:
			return nil, l.n, err
		}
		if tooLong {
			return nil, l.n, errLineTooLong
		}
		return bytes.TrimRight(l.buf, "\r\n"), l.n, nil
	}
}
