package listings

import (
	"container/heap"
	"context"
	"database/sql"
	"slices"

	"github.com/agritrade/api/platform/db"
)

// A search around a point on SQLite chooses its page in Go (searchNear): one
// statement reads the matches from the geo index alone (row id, the order's
// key and the id of each), the process counts them and keeps the best
// offset+limit in a heap, and a second statement reads the page's rows by
// row id. Choosing the page in SQL needed the matches twice (counted, and
// sorted for the page), so SQLite stored them in a table of its own first:
// about 1.2 µs a match, 40% of the statement for a 50 km search of ~450
// matches (workload L), against about 1 µs a match to hand them to Go, with
// no copy kept. Pages further on than topNMax keep the single statement
// (searchPage), so memory stays bounded whatever the offset.
var topNMax = 1000

// pageKey is a match as the page's order sees it: its key (text for the
// dates, a number for price and distance), then its id, as SQLite's ORDER BY
// key, id compares them (BINARY text, numbers by value).
type pageKey struct {
	rid  int64
	text string
	num  float64
	id   string
}

// sortKey answers the SQL of the order's key and whether it is a number.
func (s *Store) sortKey(sr Search, b *db.Binder) (string, []any, bool) {
	switch sr.Page.SortBy {
	case SortDistance:
		return s.distanceSQL(), []any{b.Arg(sr.Near.Lat), b.Arg(sr.Near.Lat), b.Arg(sr.Near.Lon)}, true
	case SortUpdated:
		return "CAST(l.updated_at AS BLOB)", nil, false
	case SortPrice:
		return "l.price_amount", nil, true
	default:
		return "CAST(l.created_at AS BLOB)", nil, false
	}
}

// order compares a and b in the page's order: negative when a comes first.
// Without ids it compares the keys alone.
func order(a, b *pageKey, num, desc, ids bool) int {
	c := 0
	switch {
	case num && a.num < b.num, !num && a.text < b.text:
		c = -1
	case num && a.num > b.num, !num && a.text > b.text:
		c = 1
	case !ids:
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
	return order(&h.keys[j], &h.keys[i], h.num, h.desc, true) < 0
}
func (h *worstFirst) Swap(i, j int) { h.keys[i], h.keys[j] = h.keys[j], h.keys[i] }
func (h *worstFirst) Push(x any)    { h.keys = append(h.keys, x.(pageKey)) }
func (h *worstFirst) Pop() any {
	k := h.keys[len(h.keys)-1]
	h.keys = h.keys[:len(h.keys)-1]
	return k
}

// searchNear answers a page of a search around a point on SQLite and the
// number of matches (see topNMax).
func (s *Store) searchNear(ctx context.Context, v Viewer, sr Search) ([]*Listing, int, error) {
	b := &db.Binder{}
	keySQL, keyArgs, num := s.sortKey(sr, b)
	matches := s.IDB.NewSelect().Model((*listingRow)(nil)).ColumnExpr("l.rowid").ColumnExpr(keySQL, keyArgs...).ColumnExpr("CAST(l.id AS BLOB)")
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
	for rows.Next() {
		dest := []any{&k.rid, &text, &id}
		if num {
			dest[1] = &k.num
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, 0, err
		}
		total++
		if !num {
			k.text = string(text)
		}
		if top.Len() < n {
			k.id = string(id)
			heap.Push(top, k)
			continue
		}
		// Most matches lose to the worst kept on the key alone: their id is
		// copied only on a tie or a win.
		c := order(&k, &top.keys[0], num, top.desc, false)
		if c == 0 {
			k.id = string(id)
			c = order(&k, &top.keys[0], num, top.desc, true)
		}
		if c > 0 {
			continue
		}
		k.id = string(id)
		top.keys[0] = k
		heap.Fix(top, 0)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	_ = rows.Close() // the pool's connection back before the page's statement
	slices.SortFunc(top.keys, func(a, b pageKey) int { return order(&a, &b, num, top.desc, true) })
	if sr.Page.Offset >= len(top.keys) {
		return []*Listing{}, total, nil
	}
	page, err := s.pageRows(ctx, v, sr, top.keys[sr.Page.Offset:])
	return page, total, err
}

// pageRows reads the page's rows by row id, in the page's order. A row whose
// id is no longer the one chosen (deleted meanwhile, its row id reused) is
// left out.
func (s *Store) pageRows(ctx context.Context, v Viewer, sr Search, page []pageKey) ([]*Listing, error) {
	b := &db.Binder{}
	rids := make([]int64, len(page))
	at := make(map[string]int, len(page))
	for i, k := range page {
		rids[i] = k.rid
		at[k.id] = i
	}
	var rows []listingRow
	q := s.selectListings(&rows, v, sr, b).Where("l.rowid IN (?)", db.BindList(b, rids))
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
