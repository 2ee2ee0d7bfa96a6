package categories

import "fmt"

// entry is one line of the reference tree below. value "" means slug(name).
type entry struct {
	id, parent int
	kind       Kind
	group      Group
	name       string
	value      string
}

// tree is the reference data, written for this project from common knowledge of
// the breeds and classes traded at UK and Irish markets. Ids are fixed forever
// (listings store them): add new ids, never renumber. Ranges: 1-5 the kinds,
// 100-149 sheep breeds, 150-199 sheep classes, 200-249 cattle breeds, 250-299
// cattle classes, 300-399 working dog breeds, 400-499 feed, 500-599 bedding.
var tree = build([]entry{
	{1, 0, Sheep, GroupKind, "Sheep", "sheep"},
	{2, 0, Cattle, GroupKind, "Cattle", "cattle"},
	{3, 0, WorkingDog, GroupKind, "Working dogs", "working-dog"},
	{4, 0, Feed, GroupKind, "Feed and forage", "feed"},
	{5, 0, Bedding, GroupKind, "Bedding", "bedding"},

	// Sheep breeds (properties.breedType of sheep listings).
	{100, 1, Sheep, GroupBreed, "Crossbred", "cross"},
	{101, 1, Sheep, GroupBreed, "Texel", ""},
	{102, 1, Sheep, GroupBreed, "Suffolk", ""},
	{103, 1, Sheep, GroupBreed, "Beltex", ""},
	{104, 1, Sheep, GroupBreed, "Charollais", ""},
	{105, 1, Sheep, GroupBreed, "Bleu du Maine", ""},
	{106, 1, Sheep, GroupBreed, "Rouge de l'Ouest", ""},
	{107, 1, Sheep, GroupBreed, "Dorset", ""},
	{108, 107, Sheep, GroupBreed, "Poll Dorset", ""},
	{109, 107, Sheep, GroupBreed, "Dorset Horn", ""},
	{110, 1, Sheep, GroupBreed, "Hampshire Down", ""},
	{111, 1, Sheep, GroupBreed, "Southdown", ""},
	{112, 1, Sheep, GroupBreed, "Oxford Down", ""},
	{113, 1, Sheep, GroupBreed, "Shropshire", ""},
	{114, 1, Sheep, GroupBreed, "Ryeland", ""},
	{115, 1, Sheep, GroupBreed, "Lleyn", ""},
	{116, 1, Sheep, GroupBreed, "Welsh Mountain", ""},
	{117, 1, Sheep, GroupBreed, "Badger Face Welsh Mountain", ""},
	{118, 1, Sheep, GroupBreed, "Beulah Speckled Face", ""},
	{119, 1, Sheep, GroupBreed, "Kerry Hill", ""},
	{120, 1, Sheep, GroupBreed, "Mule", ""},
	{121, 120, Sheep, GroupBreed, "North Country Mule", ""},
	{122, 120, Sheep, GroupBreed, "Welsh Mule", ""},
	{123, 120, Sheep, GroupBreed, "Scotch Mule", ""},
	{124, 120, Sheep, GroupBreed, "Mayo Mule", ""},
	{125, 1, Sheep, GroupBreed, "Scottish Blackface", ""},
	{126, 1, Sheep, GroupBreed, "Swaledale", ""},
	{127, 1, Sheep, GroupBreed, "Herdwick", ""},
	{128, 1, Sheep, GroupBreed, "Rough Fell", ""},
	{129, 1, Sheep, GroupBreed, "Dalesbred", ""},
	{130, 1, Sheep, GroupBreed, "Cheviot", ""},
	{131, 130, Sheep, GroupBreed, "North Country Cheviot", ""},
	{132, 130, Sheep, GroupBreed, "South Country Cheviot", ""},
	{133, 1, Sheep, GroupBreed, "Jacob", ""},
	{134, 1, Sheep, GroupBreed, "Zwartbles", ""},
	{135, 1, Sheep, GroupBreed, "Romney", ""},
	{136, 1, Sheep, GroupBreed, "Wensleydale", ""},
	{137, 1, Sheep, GroupBreed, "Bluefaced Leicester", ""},
	{138, 1, Sheep, GroupBreed, "Border Leicester", ""},
	{139, 1, Sheep, GroupBreed, "Hebridean", ""},
	{140, 1, Sheep, GroupBreed, "Shetland", ""},
	{141, 1, Sheep, GroupBreed, "Easy Care", ""},
	{142, 1, Sheep, GroupBreed, "Galway", ""},
	{143, 1, Sheep, GroupBreed, "Belclare", ""},
	{144, 1, Sheep, GroupBreed, "Vendéen", ""},
	{145, 1, Sheep, GroupBreed, "Other breed", "other"},

	// Sheep classes (values of properties.type of sheep listings).
	{150, 1, Sheep, GroupType, "Store lambs", "store"},
	{151, 1, Sheep, GroupType, "Prime lambs", "prime"},
	{152, 1, Sheep, GroupType, "Breeding sheep", "breeding"},
	{153, 1, Sheep, GroupType, "Cull ewes and rams", "cull"},
	{154, 1, Sheep, GroupType, "Ewes with lambs at foot", "with-lambs-at-foot"},

	// Cattle breeds (properties.breedType of cattle listings).
	{200, 2, Cattle, GroupBreed, "Crossbred", "cross"},
	{201, 2, Cattle, GroupBreed, "Aberdeen Angus", ""},
	{202, 2, Cattle, GroupBreed, "Hereford", ""},
	{203, 2, Cattle, GroupBreed, "Limousin", ""},
	{204, 2, Cattle, GroupBreed, "Charolais", ""},
	{205, 2, Cattle, GroupBreed, "Simmental", ""},
	{206, 2, Cattle, GroupBreed, "British Blue", ""},
	{207, 2, Cattle, GroupBreed, "Belgian Blue", ""},
	{208, 2, Cattle, GroupBreed, "Blonde d'Aquitaine", ""},
	{209, 2, Cattle, GroupBreed, "Salers", ""},
	{210, 2, Cattle, GroupBreed, "Highland", ""},
	{211, 2, Cattle, GroupBreed, "Welsh Black", ""},
	{212, 2, Cattle, GroupBreed, "Shorthorn", ""},
	{213, 212, Cattle, GroupBreed, "Beef Shorthorn", ""},
	{214, 212, Cattle, GroupBreed, "Dairy Shorthorn", ""},
	{215, 2, Cattle, GroupBreed, "Galloway", ""},
	{216, 215, Cattle, GroupBreed, "Belted Galloway", ""},
	{217, 2, Cattle, GroupBreed, "Luing", ""},
	{218, 2, Cattle, GroupBreed, "South Devon", ""},
	{219, 2, Cattle, GroupBreed, "Red Ruby Devon", ""},
	{220, 2, Cattle, GroupBreed, "Sussex", ""},
	{221, 2, Cattle, GroupBreed, "Lincoln Red", ""},
	{222, 2, Cattle, GroupBreed, "Longhorn", ""},
	{223, 2, Cattle, GroupBreed, "Dexter", ""},
	{224, 2, Cattle, GroupBreed, "Parthenaise", ""},
	{225, 2, Cattle, GroupBreed, "Stabiliser", ""},
	{226, 2, Cattle, GroupBreed, "Wagyu", ""},
	{227, 2, Cattle, GroupBreed, "Holstein Friesian", ""},
	{228, 227, Cattle, GroupBreed, "Holstein", ""},
	{229, 227, Cattle, GroupBreed, "British Friesian", ""},
	{230, 2, Cattle, GroupBreed, "Jersey", ""},
	{231, 2, Cattle, GroupBreed, "Guernsey", ""},
	{232, 2, Cattle, GroupBreed, "Ayrshire", ""},
	{233, 2, Cattle, GroupBreed, "Brown Swiss", ""},
	{234, 2, Cattle, GroupBreed, "Montbéliarde", ""},
	{235, 2, Cattle, GroupBreed, "Fleckvieh", ""},
	{236, 2, Cattle, GroupBreed, "Norwegian Red", ""},
	{237, 2, Cattle, GroupBreed, "Kerry", ""},
	{238, 2, Cattle, GroupBreed, "Irish Moiled", ""},
	{239, 2, Cattle, GroupBreed, "Murray Grey", ""},
	{240, 2, Cattle, GroupBreed, "Other breed", "other"},

	// Cattle classes (values of properties.type of cattle listings).
	{250, 2, Cattle, GroupType, "Calves", "calves"},
	{251, 2, Cattle, GroupType, "Weanlings", "weanlings"},
	{252, 2, Cattle, GroupType, "Store cattle", "stores"},
	{253, 2, Cattle, GroupType, "Finished cattle", "finished"},
	{254, 2, Cattle, GroupType, "Breeding cattle", "breeding"},
	{255, 2, Cattle, GroupType, "Dairy cattle", "dairy"},
	{256, 2, Cattle, GroupType, "Cull cows", "cull"},
	{257, 2, Cattle, GroupType, "Cows with calves at foot", "cows-with-calves"},

	// Working dog breeds (properties.breedType of working dog listings).
	{300, 3, WorkingDog, GroupBreed, "Crossbred", "cross"},
	{301, 3, WorkingDog, GroupBreed, "Border Collie", ""},
	{302, 3, WorkingDog, GroupBreed, "Welsh Sheepdog", ""},
	{303, 3, WorkingDog, GroupBreed, "Kelpie", ""},
	{304, 3, WorkingDog, GroupBreed, "Huntaway", ""},
	{305, 3, WorkingDog, GroupBreed, "Bearded Collie", ""},
	{306, 3, WorkingDog, GroupBreed, "Australian Cattle Dog", ""},
	{307, 3, WorkingDog, GroupBreed, "Australian Shepherd", ""},
	{308, 3, WorkingDog, GroupBreed, "English Shepherd", ""},
	{309, 3, WorkingDog, GroupBreed, "Other breed", "other"},

	// Feed and forage.
	{400, 4, Feed, GroupFeed, "Hay", ""},
	{401, 400, Feed, GroupFeed, "Meadow hay", ""},
	{402, 400, Feed, GroupFeed, "Seed hay", ""},
	{403, 4, Feed, GroupFeed, "Haylage", ""},
	{404, 4, Feed, GroupFeed, "Silage", ""},
	{405, 404, Feed, GroupFeed, "Grass silage", ""},
	{406, 404, Feed, GroupFeed, "Maize silage", ""},
	{407, 404, Feed, GroupFeed, "Wholecrop silage", ""},
	{408, 4, Feed, GroupFeed, "Feed straw", ""},
	{409, 408, Feed, GroupFeed, "Barley straw", ""},
	{410, 408, Feed, GroupFeed, "Oat straw", ""},
	{411, 408, Feed, GroupFeed, "Wheat straw", ""},
	{412, 4, Feed, GroupFeed, "Grain", ""},
	{413, 412, Feed, GroupFeed, "Barley", ""},
	{414, 412, Feed, GroupFeed, "Wheat", ""},
	{415, 412, Feed, GroupFeed, "Oats", ""},
	{416, 412, Feed, GroupFeed, "Maize", ""},
	{417, 4, Feed, GroupFeed, "Concentrates", ""},
	{418, 417, Feed, GroupFeed, "Cattle nuts", ""},
	{419, 417, Feed, GroupFeed, "Ewe nuts", ""},
	{420, 417, Feed, GroupFeed, "Calf and lamb creep feed", ""},
	{421, 417, Feed, GroupFeed, "Coarse mix", ""},
	{422, 4, Feed, GroupFeed, "Protein feeds", ""},
	{423, 422, Feed, GroupFeed, "Soya bean meal", ""},
	{424, 422, Feed, GroupFeed, "Rapeseed meal", ""},
	{425, 4, Feed, GroupFeed, "Fodder beet", ""},
	{426, 4, Feed, GroupFeed, "Sugar beet pulp", ""},
	{427, 4, Feed, GroupFeed, "Brewers' grains", ""},
	{428, 4, Feed, GroupFeed, "Distillers' grains", ""},
	{429, 4, Feed, GroupFeed, "Molasses", ""},
	{430, 4, Feed, GroupFeed, "Minerals and licks", ""},
	{431, 4, Feed, GroupFeed, "Other feed", "other"},

	// Bedding.
	{500, 5, Bedding, GroupBedding, "Straw", ""},
	{501, 500, Bedding, GroupBedding, "Wheat straw", ""},
	{502, 500, Bedding, GroupBedding, "Barley straw", ""},
	{503, 500, Bedding, GroupBedding, "Oat straw", ""},
	{504, 500, Bedding, GroupBedding, "Oilseed rape straw", ""},
	{505, 5, Bedding, GroupBedding, "Wood shavings", ""},
	{506, 5, Bedding, GroupBedding, "Sawdust", ""},
	{507, 5, Bedding, GroupBedding, "Shredded paper", ""},
	{508, 5, Bedding, GroupBedding, "Chopped cardboard", ""},
	{509, 5, Bedding, GroupBedding, "Miscanthus", ""},
	{510, 5, Bedding, GroupBedding, "Hemp", ""},
	{511, 5, Bedding, GroupBedding, "Wood pellets", ""},
	{512, 5, Bedding, GroupBedding, "Sand", ""},
	{513, 5, Bedding, GroupBedding, "Recycled manure solids", ""},
	{514, 5, Bedding, GroupBedding, "Other bedding", "other"},
})

// build turns the entries into categories and checks the tree's invariants
// (unique ids, parents before children and of the same kind), so that a bad
// edit fails at start-up and in every test rather than in production data.
func build(entries []entry) []Category {
	seen := map[int]Kind{}
	out := make([]Category, 0, len(entries))
	for _, e := range entries {
		if _, dup := seen[e.id]; dup {
			panic(fmt.Sprintf("categories: duplicate id %d", e.id))
		}
		c := Category{ID: e.id, Name: e.name, Kind: e.kind, Group: e.group, Value: e.value}
		if c.Value == "" {
			c.Value = slug(e.name)
		}
		if e.parent != 0 {
			kind, ok := seen[e.parent]
			if !ok || kind != e.kind {
				panic(fmt.Sprintf("categories: %d has parent %d that is not an earlier category of kind %s", e.id, e.parent, e.kind))
			}
			parent := e.parent
			c.ParentID = &parent
		}
		seen[e.id] = e.kind
		out = append(out, c)
	}
	return out
}
