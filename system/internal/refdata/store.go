package refdata

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/uptrace/bun"
)

// The stored rows; only this file knows them.
type (
	parameterRow struct {
		bun.BaseModel `bun:"table:refdata_parameters"`
		Key           string `bun:"key,pk"`
		Value         string `bun:"value"`
	}
	countryRow struct {
		bun.BaseModel    `bun:"table:refdata_countries"`
		ISO              string  `bun:"iso,pk"`
		ISO3             string  `bun:"iso3"`
		Name             string  `bun:"name"`
		Currency         string  `bun:"currency"`
		CallingCode      string  `bun:"calling_code"`
		UnitDistance     string  `bun:"unit_distance"`
		UnitWeight       string  `bun:"unit_weight"`
		UnitCapacity     string  `bun:"unit_capacity"`
		UnitTemperature  string  `bun:"unit_temperature"`
		ZoneDescriptor   string  `bun:"zone_descriptor"`
		Locale           string  `bun:"locale"`
		Continent        string  `bun:"continent"`
		Enabled          bool    `bun:"enabled"`
		WeightName       string  `bun:"weight_name"`
		WeightConversion float64 `bun:"weight_conversion"`
		SortOrder        int     `bun:"sort_order"`
	}
	regionRow struct {
		bun.BaseModel `bun:"table:refdata_regions"`
		ISO           string `bun:"iso,pk"`
		Country       string `bun:"country"`
		Name          string `bun:"name"`
		Group         string `bun:"region_group"`
		UKGroup       string `bun:"uk_group"`
		TB            int    `bun:"tb"`
		Aliases       string `bun:"aliases"`
		SortOrder     int    `bun:"sort_order"`
	}
	groupRow struct {
		bun.BaseModel               `bun:"table:refdata_commodity_groups"`
		ID                          string  `bun:"id,pk"`
		Country                     string  `bun:"country"`
		Kind                        string  `bun:"kind"`
		DefaultWeightName           string  `bun:"default_weight_name"`
		DefaultWeightConversion     float64 `bun:"default_weight_conversion"`
		WeighbridgeWeightName       string  `bun:"weighbridge_weight_name"`
		WeighbridgeWeightConversion float64 `bun:"weighbridge_weight_conversion"`
		SortOrder                   int     `bun:"sort_order"`
	}
	itemRow struct {
		bun.BaseModel    `bun:"table:refdata_commodity_items"`
		ID               int     `bun:"id,pk"`
		GroupID          string  `bun:"group_id"`
		Name             string  `bun:"name"`
		Tags             string  `bun:"tags"`
		WeightName       string  `bun:"weight_name"`
		WeightConversion float64 `bun:"weight_conversion"`
		SortOrder        int     `bun:"sort_order"`
	}
	typeRow struct {
		bun.BaseModel `bun:"table:refdata_commodity_types"`
		ID            int    `bun:"id,pk"`
		ItemID        int    `bun:"item_id"`
		Name          string `bun:"name"`
		SortOrder     int    `bun:"sort_order"`
	}
	gradeRow struct {
		bun.BaseModel      `bun:"table:refdata_commodity_grades"`
		ID                 int        `bun:"id,pk"`
		TypeID             int        `bun:"type_id"`
		Name               string     `bun:"name"`
		SortOrder          int        `bun:"sort_order"`
		VarietiesSource    string     `bun:"varieties_source"`
		VarietiesUpdatedAt *time.Time `bun:"varieties_updated_at,nullzero"`
		VarietiesUpdatedBy string     `bun:"varieties_updated_by"`
	}
	varietyRow struct {
		bun.BaseModel `bun:"table:refdata_varieties"`
		GradeID       int    `bun:"grade_id,pk"`
		Name          string `bun:"name,pk"`
		SortOrder     int    `bun:"sort_order"`
	}
	specRow struct {
		bun.BaseModel `bun:"table:refdata_specifications"`
		ID            int    `bun:"id,pk"`
		Name          string `bun:"name"`
		Unit          string `bun:"unit"`
	}
	measureRow struct {
		bun.BaseModel `bun:"table:refdata_grade_measures"`
		GradeID       int     `bun:"grade_id,pk"`
		SpecID        int     `bun:"spec_id,pk"`
		Min           float64 `bun:"min_value"`
		Max           float64 `bun:"max_value"`
		SortOrder     int     `bun:"sort_order"`
	}
	reasonRow struct {
		bun.BaseModel `bun:"table:refdata_reasons"`
		Kind          string `bun:"kind,pk"`
		ID            int    `bun:"id,pk"`
		Description   string `bun:"description"`
		SortOrder     int    `bun:"sort_order"`
	}
	exFarmRow struct {
		bun.BaseModel `bun:"table:refdata_ex_farm_prices"`
		ID            int    `bun:"id,pk"`
		Name          string `bun:"name"`
		CommodityID   int    `bun:"commodity_id"`
		Grades        string `bun:"grades"`
		IsDefault     bool   `bun:"is_default"`
		SortOrder     int    `bun:"sort_order"`
	}
	conversionRow struct {
		bun.BaseModel `bun:"table:refdata_conversions"`
		Key           string  `bun:"key,pk"`
		Factor        float64 `bun:"factor"`
	}
	sellerRow struct {
		bun.BaseModel `bun:"table:refdata_seller_commodities"`
		ID            string `bun:"id,pk"`
		Name          string `bun:"name"`
		SortOrder     int    `bun:"sort_order"`
	}
)

// Parameter keys of refdata_parameters.
const (
	paramVersion  = "data_version"
	paramSeamless = "seamless_trading"
)

// Reason kinds of refdata_reasons.
const (
	kindDeduction = "settlement_deduction"
	kindBonus     = "settlement_bonus"
	kindClose     = "close_listing"
)

// Variety sources of a grade.
const (
	sourceSeed   = "seed"
	sourceImport = "import"
)

// seedLock is the PostgreSQL advisory lock that serialises the seed of
// replicas starting together and the variety imports.
const seedLock = 0x7265666461 // "refda"

// insertBatch bounds the rows of one INSERT (SQLite caps bound parameters).
const insertBatch = 400

// Store reads and writes the reference data.
type Store struct {
	db *bun.DB
}

// NewStore makes a store over the database.
func NewStore(db *bun.DB) *Store { return &Store{db: db} }

// DataVersion returns the version of the seeded data, "" before the first seed.
func (s *Store) DataVersion(ctx context.Context) (string, error) {
	return dataVersion(ctx, s.db)
}

func dataVersion(ctx context.Context, idb bun.IDB) (string, error) {
	var p parameterRow
	err := idb.NewSelect().Model(&p).Where("key = ?", paramVersion).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return p.Value, err
}

// Seed replaces the reference data with d in one transaction, unless another
// replica got there first. Varieties that an import set are kept for grades
// that still exist. It reports whether it wrote anything.
func (s *Store) Seed(ctx context.Context, d *Dataset) (bool, error) {
	seeded := false
	err := db.InTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		if db.IsPostgres(tx) {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", seedLock); err != nil {
				return err
			}
		}
		if v, err := dataVersion(ctx, tx); err != nil || v == d.Version {
			return err
		}
		var imported []gradeRow
		if err := tx.NewSelect().Model(&imported).Where("varieties_source = ?", sourceImport).Scan(ctx); err != nil {
			return err
		}
		keep := map[int]gradeRow{}
		for _, g := range imported {
			keep[g.ID] = g
		}
		for _, m := range []any{(*parameterRow)(nil), (*countryRow)(nil), (*regionRow)(nil), (*groupRow)(nil), (*itemRow)(nil),
			(*typeRow)(nil), (*gradeRow)(nil), (*specRow)(nil), (*measureRow)(nil), (*reasonRow)(nil), (*exFarmRow)(nil),
			(*conversionRow)(nil), (*sellerRow)(nil)} {
			if _, err := tx.NewDelete().Model(m).Where("1 = 1").Exec(ctx); err != nil {
				return err
			}
		}
		// Varieties go too, except the imported lists, which outlive a reseed.
		del := tx.NewDelete().Model((*varietyRow)(nil))
		if len(keep) == 0 {
			del = del.Where("1 = 1")
		} else {
			ids := make([]int, 0, len(keep))
			for id := range keep {
				ids = append(ids, id)
			}
			del = del.Where("grade_id NOT IN (?)", bun.List(ids))
		}
		if _, err := del.Exec(ctx); err != nil {
			return err
		}
		if err := insertDataset(ctx, tx, d, keep); err != nil {
			return err
		}
		// Imported lists of grades that no longer exist go with their grade.
		if _, err := tx.NewDelete().Model((*varietyRow)(nil)).
			Where("grade_id NOT IN (SELECT id FROM refdata_commodity_grades)").Exec(ctx); err != nil {
			return err
		}
		seeded = true
		return nil
	})
	return seeded, err
}

// insertDataset writes every row of d in batches; grades in keep keep their
// imported varieties and provenance.
func insertDataset(ctx context.Context, tx bun.Tx, d *Dataset, keep map[int]gradeRow) error {
	seamless, err := json.Marshal(d.Trading.SeamlessTrading)
	if err != nil {
		return err
	}
	params := []parameterRow{{Key: paramVersion, Value: d.Version}, {Key: paramSeamless, Value: string(seamless)}}
	countries := make([]countryRow, len(d.Countries))
	for i, c := range d.Countries {
		countries[i] = countryRow{ISO: c.ISO, ISO3: c.ISO3, Name: c.Name, Currency: c.Currency, CallingCode: c.CallingCode,
			UnitDistance: c.Units.Distance, UnitWeight: c.Units.Weight, UnitCapacity: c.Units.Capacity, UnitTemperature: c.Units.Temperature,
			ZoneDescriptor: c.ZoneDescriptor, Locale: c.Locale, Continent: c.Continent, Enabled: c.Enabled,
			WeightName: c.DefaultWeight.Name, WeightConversion: c.DefaultWeight.Conversion, SortOrder: i}
	}
	regions := make([]regionRow, len(d.Regions))
	for i, r := range d.Regions {
		aliases, err := json.Marshal(r.Aliases)
		if err != nil {
			return err
		}
		regions[i] = regionRow{ISO: r.ISO, Country: r.Country, Name: r.Name, Group: r.Group, UKGroup: r.UKGroup, TB: r.TB, Aliases: string(aliases), SortOrder: i}
	}
	var (
		groups    []groupRow
		items     []itemRow
		types     []typeRow
		grades    []gradeRow
		varieties []varietyRow
		measures  []measureRow
	)
	for gi, g := range d.Commodities {
		groups = append(groups, groupRow{ID: g.ID, Country: g.CountryISO, Kind: g.Type,
			DefaultWeightName: g.DefaultWeight.Name, DefaultWeightConversion: g.DefaultWeight.Conversion,
			WeighbridgeWeightName: g.WeighbridgeWeight.Name, WeighbridgeWeightConversion: g.WeighbridgeWeight.Conversion, SortOrder: gi})
		for ii, it := range g.Items {
			tags, err := json.Marshal(it.Tags)
			if err != nil {
				return err
			}
			items = append(items, itemRow{ID: it.ID, GroupID: g.ID, Name: it.Name, Tags: string(tags), WeightName: it.Weight.Name, WeightConversion: it.Weight.Conversion, SortOrder: ii})
			for ti, t := range it.Types {
				types = append(types, typeRow{ID: t.ID, ItemID: it.ID, Name: t.Name, SortOrder: ti})
				for ri, gr := range t.Grades {
					row := gradeRow{ID: gr.ID, TypeID: t.ID, Name: gr.Name, SortOrder: ri, VarietiesSource: sourceSeed}
					if k, ok := keep[gr.ID]; ok {
						row.VarietiesSource, row.VarietiesUpdatedAt, row.VarietiesUpdatedBy = k.VarietiesSource, k.VarietiesUpdatedAt, k.VarietiesUpdatedBy
					} else {
						for vi, v := range gr.Varieties {
							varieties = append(varieties, varietyRow{GradeID: gr.ID, Name: v, SortOrder: vi})
						}
					}
					grades = append(grades, row)
					for mi, m := range d.Measures[gr.ID] {
						measures = append(measures, measureRow{GradeID: gr.ID, SpecID: m.Specification.ID, Min: m.Min, Max: m.Max, SortOrder: mi})
					}
				}
			}
		}
	}
	specs := make([]specRow, len(d.Specifications))
	for i, sp := range d.Specifications {
		specs[i] = specRow{ID: sp.ID, Name: sp.Name, Unit: sp.Unit}
	}
	var reasons []reasonRow
	for _, k := range []struct {
		kind string
		rs   []Reason
	}{{kindDeduction, d.Trading.SettlementDeductionReasons}, {kindBonus, d.Trading.SettlementBonusReasons}, {kindClose, d.Trading.CloseListingReasons}} {
		for i, r := range k.rs {
			reasons = append(reasons, reasonRow{Kind: k.kind, ID: r.ID, Description: r.Description, SortOrder: i})
		}
	}
	exFarm := make([]exFarmRow, len(d.Trading.ExFarmPriceCommodities))
	for i, e := range d.Trading.ExFarmPriceCommodities {
		gs, err := json.Marshal(e.Grades)
		if err != nil {
			return err
		}
		exFarm[i] = exFarmRow{ID: e.ID, Name: e.Name, CommodityID: e.CommodityID, Grades: string(gs), IsDefault: e.Default, SortOrder: i}
	}
	var conversions []conversionRow
	for _, k := range sortedKeys(d.Conversions) {
		conversions = append(conversions, conversionRow{Key: k, Factor: d.Conversions[k]})
	}
	sellers := make([]sellerRow, len(d.SellerCommodities))
	for i, sc := range d.SellerCommodities {
		sellers[i] = sellerRow{ID: sc.ID, Name: sc.Name, SortOrder: i}
	}
	return errors.Join(
		insertChunks(ctx, tx, params), insertChunks(ctx, tx, countries), insertChunks(ctx, tx, regions),
		insertChunks(ctx, tx, groups), insertChunks(ctx, tx, items), insertChunks(ctx, tx, types),
		insertChunks(ctx, tx, grades), insertChunks(ctx, tx, varieties), insertChunks(ctx, tx, specs),
		insertChunks(ctx, tx, measures), insertChunks(ctx, tx, reasons), insertChunks(ctx, tx, exFarm),
		insertChunks(ctx, tx, conversions), insertChunks(ctx, tx, sellers),
	)
}

// insertChunks inserts rows with multi-row INSERTs of at most insertBatch rows.
func insertChunks[T any](ctx context.Context, idb bun.IDB, rows []T) error {
	for start := 0; start < len(rows); start += insertBatch {
		chunk := rows[start:min(start+insertBatch, len(rows))]
		if _, err := idb.NewInsert().Model(&chunk).Exec(ctx); err != nil {
			var zero T
			return fmt.Errorf("insert %T: %w", zero, err)
		}
	}
	return nil
}

// LoadCatalogue reads every piece of reference data, one query per table.
func (s *Store) LoadCatalogue(ctx context.Context) (*Catalogue, error) {
	var (
		countries   []countryRow
		regions     []regionRow
		groups      []groupRow
		items       []itemRow
		types       []typeRow
		grades      []gradeRow
		varieties   []varietyRow
		reasons     []reasonRow
		exFarm      []exFarmRow
		conversions []conversionRow
		sellers     []sellerRow
		seamless    parameterRow
	)
	for _, q := range []struct {
		model any
		order string
	}{
		{&countries, "sort_order"}, {&regions, "sort_order"}, {&groups, "sort_order"}, {&items, "sort_order"},
		{&types, "sort_order"}, {&grades, "sort_order"}, {&varieties, "sort_order"}, {&reasons, "sort_order"},
		{&exFarm, "sort_order"}, {&conversions, "key"}, {&sellers, "sort_order"},
	} {
		if err := s.db.NewSelect().Model(q.model).Order(q.order).Scan(ctx); err != nil {
			return nil, fmt.Errorf("load reference data: %w", err)
		}
	}
	if err := s.db.NewSelect().Model(&seamless).Where("key = ?", paramSeamless).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	c := &Catalogue{Conversions: map[string]float64{}}
	if seamless.Value != "" {
		if err := json.Unmarshal([]byte(seamless.Value), &c.Trading.SeamlessTrading); err != nil {
			return nil, fmt.Errorf("stored seamless trading periods: %w", err)
		}
	}
	for _, r := range countries {
		c.Countries = append(c.Countries, Country{ISO: r.ISO, Name: r.Name, Enabled: r.Enabled,
			Units: Units{Distance: r.UnitDistance, Weight: r.UnitWeight, Capacity: r.UnitCapacity, Temperature: r.UnitTemperature},
			ISO3:  r.ISO3, Currency: r.Currency, CallingCode: r.CallingCode, ZoneDescriptor: r.ZoneDescriptor, Locale: r.Locale,
			Continent: r.Continent, DefaultWeight: WeightUnit{Name: r.WeightName, Conversion: r.WeightConversion}})
	}
	for _, r := range regions {
		reg := Region{ISO: r.ISO, Name: r.Name, TB: r.TB, Country: r.Country, Group: r.Group, UKGroup: r.UKGroup}
		if err := json.Unmarshal([]byte(r.Aliases), &reg.Aliases); err != nil {
			return nil, fmt.Errorf("aliases of %s: %w", r.ISO, err)
		}
		c.Regions = append(c.Regions, reg)
	}
	// Assemble the tree bottom-up: rows arrive sorted, so appends keep the order.
	varietiesOf := map[int][]string{}
	for _, v := range varieties {
		varietiesOf[v.GradeID] = append(varietiesOf[v.GradeID], v.Name)
	}
	gradesOf := map[int][]Grade{}
	for _, g := range grades {
		vs := varietiesOf[g.ID]
		if vs == nil {
			vs = []string{}
		}
		gradesOf[g.TypeID] = append(gradesOf[g.TypeID], Grade{ID: g.ID, Name: g.Name, Varieties: vs})
	}
	typesOf := map[int][]CommodityType{}
	for _, t := range types {
		gs := gradesOf[t.ID]
		if gs == nil {
			gs = []Grade{}
		}
		typesOf[t.ItemID] = append(typesOf[t.ItemID], CommodityType{ID: t.ID, Name: t.Name, Grades: gs})
	}
	itemsOf := map[string][]CommodityItem{}
	for _, it := range items {
		item := CommodityItem{ID: it.ID, Name: it.Name, Types: typesOf[it.ID], Weight: WeightUnit{Name: it.WeightName, Conversion: it.WeightConversion}}
		if item.Types == nil {
			item.Types = []CommodityType{}
		}
		if err := json.Unmarshal([]byte(it.Tags), &item.Tags); err != nil {
			return nil, fmt.Errorf("tags of commodity %d: %w", it.ID, err)
		}
		itemsOf[it.GroupID] = append(itemsOf[it.GroupID], item)
	}
	for _, g := range groups {
		its := itemsOf[g.ID]
		if its == nil {
			its = []CommodityItem{}
		}
		c.Commodities = append(c.Commodities, Commodity{ID: g.ID, CountryISO: g.Country, Items: its, Type: g.Kind,
			DefaultWeight:     WeightUnit{Name: g.DefaultWeightName, Conversion: g.DefaultWeightConversion},
			WeighbridgeWeight: WeightUnit{Name: g.WeighbridgeWeightName, Conversion: g.WeighbridgeWeightConversion}})
	}
	c.Trading.SettlementDeductionReasons, c.Trading.SettlementBonusReasons, c.Trading.CloseListingReasons = []Reason{}, []Reason{}, []Reason{}
	for _, r := range reasons {
		reason := Reason{ID: r.ID, Description: r.Description}
		switch r.Kind {
		case kindDeduction:
			c.Trading.SettlementDeductionReasons = append(c.Trading.SettlementDeductionReasons, reason)
		case kindBonus:
			c.Trading.SettlementBonusReasons = append(c.Trading.SettlementBonusReasons, reason)
		case kindClose:
			c.Trading.CloseListingReasons = append(c.Trading.CloseListingReasons, reason)
		}
	}
	c.Trading.ExFarmPriceCommodities = []ExFarmPriceCommodity{}
	for _, e := range exFarm {
		x := ExFarmPriceCommodity{ID: e.ID, Name: e.Name, CommodityID: e.CommodityID, Default: e.IsDefault}
		if err := json.Unmarshal([]byte(e.Grades), &x.Grades); err != nil {
			return nil, fmt.Errorf("grades of ex-farm price commodity %d: %w", e.ID, err)
		}
		c.Trading.ExFarmPriceCommodities = append(c.Trading.ExFarmPriceCommodities, x)
	}
	for _, r := range conversions {
		c.Conversions[r.Key] = r.Factor
	}
	for _, r := range sellers {
		c.SellerCommodities = append(c.SellerCommodities, SellerCommodity{ID: r.ID, Name: r.Name})
	}
	return c, nil
}

// ItemUnit returns a commodity item's name and weight unit.
func (s *Store) ItemUnit(ctx context.Context, id int) (ItemUnit, bool, error) {
	var r itemRow
	err := s.db.NewSelect().Model(&r).Column("name", "weight_name", "weight_conversion").Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return ItemUnit{}, false, nil
	}
	if err != nil {
		return ItemUnit{}, false, err
	}
	return ItemUnit{Name: r.Name, Weight: WeightUnit{Name: r.WeightName, Conversion: r.WeightConversion}}, true, nil
}

// ItemTree returns a commodity item with its types and grades (no varieties).
func (s *Store) ItemTree(ctx context.Context, id int) (*CommodityItem, error) {
	var it itemRow
	err := s.db.NewSelect().Model(&it).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var types []typeRow
	if err := s.db.NewSelect().Model(&types).Where("item_id = ?", id).Order("sort_order").Scan(ctx); err != nil {
		return nil, err
	}
	var grades []gradeRow
	if err := s.db.NewSelect().Model(&grades).
		Where("type_id IN (SELECT id FROM refdata_commodity_types WHERE item_id = ?)", id).
		Order("type_id", "sort_order").Scan(ctx); err != nil {
		return nil, err
	}
	gradesOf := map[int][]Grade{}
	for _, g := range grades {
		gradesOf[g.TypeID] = append(gradesOf[g.TypeID], Grade{ID: g.ID, Name: g.Name, Varieties: []string{}})
	}
	item := &CommodityItem{ID: it.ID, Name: it.Name, Weight: WeightUnit{Name: it.WeightName, Conversion: it.WeightConversion}}
	for _, t := range types {
		item.Types = append(item.Types, CommodityType{ID: t.ID, Name: t.Name, Grades: gradesOf[t.ID]})
	}
	return item, nil
}

// Measures returns a grade's default specification in display order.
func (s *Store) Measures(ctx context.Context, gradeID int) ([]Measure, error) {
	var rows []struct {
		SpecID int     `bun:"spec_id"`
		Name   string  `bun:"name"`
		Unit   string  `bun:"unit"`
		Min    float64 `bun:"min_value"`
		Max    float64 `bun:"max_value"`
	}
	err := s.db.NewSelect().TableExpr("refdata_grade_measures AS m").
		Join("JOIN refdata_specifications AS s ON s.id = m.spec_id").
		ColumnExpr("m.spec_id, s.name, s.unit, m.min_value, m.max_value").
		Where("m.grade_id = ?", gradeID).OrderExpr("m.sort_order").Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	out := make([]Measure, len(rows))
	for i, r := range rows {
		out[i] = Measure{Specification: SpecUnit{ID: r.SpecID, Name: r.Name, Unit: r.Unit}, Min: r.Min, Max: r.Max}
	}
	return out, nil
}

// GradeIndex returns every grade of the given commodity items, keyed by item
// and lower-cased type and grade names, in one query.
func (s *Store) GradeIndex(ctx context.Context, itemIDs []int) (map[GradeKey]GradeRef, map[int]bool, error) {
	grades, items := map[GradeKey]GradeRef{}, map[int]bool{}
	if len(itemIDs) == 0 {
		return grades, items, nil
	}
	var rows []struct {
		ItemID    int    `bun:"item_id"`
		ItemName  string `bun:"item_name"`
		Country   string `bun:"country"`
		TypeName  string `bun:"type_name"`
		GradeID   int    `bun:"grade_id"`
		GradeName string `bun:"grade_name"`
	}
	err := s.db.NewSelect().TableExpr("refdata_commodity_items AS i").
		Join("JOIN refdata_commodity_groups AS cg ON cg.id = i.group_id").
		Join("LEFT JOIN refdata_commodity_types AS t ON t.item_id = i.id").
		Join("LEFT JOIN refdata_commodity_grades AS g ON g.type_id = t.id").
		ColumnExpr("i.id AS item_id, i.name AS item_name, cg.country, COALESCE(t.name, '') AS type_name, COALESCE(g.id, 0) AS grade_id, COALESCE(g.name, '') AS grade_name").
		Where("i.id IN (?)", bun.List(itemIDs)).Scan(ctx, &rows)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range rows {
		items[r.ItemID] = true
		if r.GradeID == 0 {
			continue
		}
		k := GradeKey{ItemID: r.ItemID, Type: strings.ToLower(r.TypeName), Grade: strings.ToLower(r.GradeName)}
		grades[k] = GradeRef{ItemName: r.ItemName, TypeName: r.TypeName, GradeName: r.GradeName, GradeID: r.GradeID, Country: r.Country}
	}
	return grades, items, nil
}

// ReplaceVarieties makes each grade's variety list exactly the given one, in
// one transaction, and records who did it.
func (s *Store) ReplaceVarieties(ctx context.Context, lists map[int][]string, by string, at time.Time) error {
	if len(lists) == 0 {
		return nil
	}
	ids := make([]int, 0, len(lists))
	var rows []varietyRow
	for id, vs := range lists {
		ids = append(ids, id)
		for i, v := range vs {
			rows = append(rows, varietyRow{GradeID: id, Name: v, SortOrder: i})
		}
	}
	return db.InTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		// Imports (and the seed) take turns: two at once would each delete the
		// old lists and then both insert the new ones (a duplicate key, 500).
		if db.IsPostgres(tx) {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", seedLock); err != nil {
				return err
			}
		}
		if _, err := tx.NewDelete().Model((*varietyRow)(nil)).Where("grade_id IN (?)", bun.List(ids)).Exec(ctx); err != nil {
			return err
		}
		if err := insertChunks(ctx, tx, rows); err != nil {
			return err
		}
		_, err := tx.NewUpdate().Model((*gradeRow)(nil)).
			Set("varieties_source = ?", sourceImport).Set("varieties_updated_at = ?", at.UTC()).Set("varieties_updated_by = ?", by).
			Where("id IN (?)", bun.List(ids)).Exec(ctx)
		return err
	})
}
