// Package locations answers the four public location operations: address
// search (two-step, like address-capture services), location by address id,
// by coordinates and by three-word address. Answers come from a provider
// chosen by configuration: the gazetteer kept in the database (the embedded
// default, seeded with UK and Irish places and postcode districts, loadable
// from GeoNames dumps), an OSM geocoder (Nominatim or Photon) or a three-word
// address service.
//
// The feature reads http.go → service.go; its parts live below it, each
// depending only on place:
//
//	place/      the vocabulary: queries, results, the Provider interfaces,
//	            coordinates, postcodes, name normalising
//	gazetteer/  the provider over the database: its store, search, seed and
//	            GeoNames importer
//	outside/    the adapters of outside services (Nominatim, Photon, the
//	            three-word service) and the paced, cached client they share
package locations
