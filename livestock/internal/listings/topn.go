package listings

import (
	"container/heap"
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/agritrade/api/platform/db"
)

// A search around a point on SQLite chooses its page in Go (searchNear): one
// statement reads the matches from the geo index alone (the order's key and
// the id of each), the process counts them and keeps the best offset+limit in
// a heap, and a second statement reads the page's rows by id. Choosing the
// page in SQL needed the matches twice (counted, and sorted for the page), so
// SQLite stored them in a table of its own first: about 1.2 µs a match, 40% of
// the statement for a 50 km search of ~450 matches (workload L), against about
// 1 µs a match to hand them to Go, with no copy kept. Pages further on than
// topNMax keep the single statement (searchPage), so memory stays bounded
// whatever the offset.
//
// A date key comes with its id in one column (dateKeySQL): each column of a
// row costs the driver a copy and three calls that each take the
// connection's mutex, a tenth of the search in a profile. Most matches lose
// to the worst kept, and are compared where the driver left them, never
// copied.
var topNMax = 1000

// pageKey is a match as the page's order sees it: for the dates, text is the
// key and the id in one (dateKeySQL), which compare as the key then the id
// do; for price and distance, num is the key and the id breaks a tie. As
// SQLite's ORDER BY key, id compares them (BINARY text, numbers by value).
type pageKey struct {
	text string
	num  float64
	id   string
}

// dateKeySQL is a date key and the id as one value: the key, a zero byte
// (which no date holds, so a shorter key still sorts first), then the id.
// Compared as bytes it orders as (key, id).
func dateKeySQL(column string) string { return "CAST(" + column + " || x'00' || l.id AS BLOB)" }

// sortKey answers the SQL of the order's key and whether it is a number.
func (s *Store) sortKey(sr Search, b *db.Binder) (string, []any, bool) {
	switch sr.Page.SortBy {
	case SortDistance:
		return s.distanceSQL(), []any{b.Arg(sr.Near.Lat), b.Arg(sr.Near.Lat), b.Arg(sr.Near.Lon)}, true
	case SortUpdated:
		return dateKeySQL("l.updated_at"), nil, false
	case SortPrice:
		return "l.price_amount", nil, true
	default:
		return dateKeySQL("l.created_at"), nil, false
	}
}

// order compares a and b in the page's order: negative when a comes first.
func order(a, b *pageKey, num, desc bool) int {
	c := 0
	switch {
	case num && a.num < b.num, !num && a.text < b.text:
		c = -1
	case num && a.num > b.num, !num && a.text > b.text:
		c = 1
	case !num:
	case a.id < b.id:
		c = -1
	case a.id > b.id:
		c = 1
	}
	if desc {
		return -c
	}
	return c
}

// worstFirst is a heap of the best matches so far with the worst on top, so
// that a better match replaces it.
type worstFirst struct {
	keys      []pageKey
	num, desc bool
}

func (h *worstFirst) Len() int { return len(h.keys) }
func (h *worstFirst) Less(i, j int) bool {
	return order(&h.keys[j], &h.keys[i], h.num, h.desc) < 0
}
func (h *worstFirst) Swap(i, j int) { h.keys[i], h.keys[j] = h.keys[j], h.keys[i] }
func (h *worstFirst) Push(x any)    { h.keys = append(h.keys, x.(pageKey)) }
func (h *worstFirst) Pop() any {
	k := h.keys[len(h.keys)-1]
	h.keys = h.keys[:len(h.keys)-1]
	return k
}

// beatsWorst tells whether a match, as the driver left it (a date key's text,
// or a number and an id), comes before the worst kept. The bytes are
// compared in place: string(b) in a comparison is not a copy.
func (h *worstFirst) beatsWorst(num float64, text, id []byte) bool {
	w := &h.keys[0]
	c := 0
	switch {
	case !h.num && string(text) < w.text, h.num && num < w.num:
		c = -1
	case !h.num && string(text) > w.text, h.num && num > w.num:
		c = 1
	case !h.num:
	case string(id) < w.id:
		c = -1
	case string(id) > w.id:
		c = 1
	}
	if h.desc {
		c = -c
	}
	return c < 0
}

// searchNear answers a page of a search around a point on SQLite and the
// number of matches (see topNMax).
func (s *Store) searchNear(ctx context.Context, v Viewer, sr Search) ([]*Listing, int, error) {
	b := &db.Binder{}
	keySQL, keyArgs, num := s.sortKey(sr, b)
	matches := s.IDB.NewSelect().Model((*listingRow)(nil)).ColumnExpr(keySQL, keyArgs...)
	if num {
		matches.ColumnExpr("CAST(l.id AS BLOB)")
	}
	s.whereBound(matches, v, sr.Filter, noFacet, b)
	rows, err := matches.Conn(s.Prepared(b)).Rows(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = rows.Close() }() // the read error, if any, comes from rows.Err
	n := sr.Page.Offset + sr.Page.Limit
	top := &worstFirst{keys: make([]pageKey, 0, min(n, 64)), num: num, desc: sr.Page.SortDesc}
	total := 0
	var k pageKey
	var text, id sql.RawBytes
	dest := []any{&text}
	if num {
		dest = []any{&k.num, &id}
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, 0, err
		}
		total++
		full := top.Len() == n
		if full && !top.beatsWorst(k.num, text, id) {
			continue
		}
		if num {
			k.id = string(id)
		} else {
			k.text = string(text)
		}
		if !full {
			heap.Push(top, k)
			continue
		}
		top.keys[0] = k
		heap.Fix(top, 0)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	_ = rows.Close() // the pool's connection back before the page's statement
	slices.SortFunc(top.keys, func(a, b pageKey) int { return order(&a, &b, num, top.desc) })
	if sr.Page.Offset >= len(top.keys) {
		return []*Listing{}, total, nil
	}
	page := top.keys[sr.Page.Offset:]
	if !num {
		for i := range page {
			page[i].id = page[i].text[strings.IndexByte(page[i].text, 0)+1:]
		}
	}
	listed, err := s.pageRows(ctx, v, sr, page)
	return listed, total, err
}

// pageRows reads the page's rows by id, in the page's order. A row deleted
// meanwhile is left out.
func (s *Store) pageRows(ctx context.Context, v Viewer, sr Search, page []pageKey) ([]*Listing, error) {
	b := &db.Binder{}
	ids := make([]string, len(page))
	at := make(map[string]int, len(page))
	for i, k := range page {
		ids[i] = k.id
		at[k.id] = i
	}
	var rows []listingRow
	q := s.selectListings(&rows, v, sr, b).Where("l.id IN (?)", db.BindList(b, ids))
	if err := q.Conn(s.Prepared(b)).Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]*Listing, len(page))
	for i := range rows {
		j, ok := at[rows[i].ID]
		if !ok {
			continue
		}
		l, err := rows[i].listing()
		if err != nil {
			return nil, err
		}
		out[j] = l
	}
	return slices.DeleteFunc(out, func(l *Listing) bool { return l == nil }), nil
}
