package main

// The ids of the sample's objects. The examples of the module OpenAPI documents
// cite them, so that every operation of /docs works with its shown example
// ("Try it") on an installation filled by `agritrade demo`
// (TestDocs_TryItEveryOperation in clients/typescript/test drives them all in
// a browser). The demo fixes them through the request's context
// (platform/ids), in process; over HTTP ids are always UUIDv7.
//
// Every example that changes something names its own object, so the examples
// work in any order: the listing that is closed is not the one edited, the
// upload that is terminated is not the one appended to, and so on.
const (
	demoIDPrefix = "01900000-0000-7000-8000-"

	demoFileTicket = demoIDPrefix + "00000000f001" // weighbridge ticket (the driver's)
	demoFileSample = demoIDPrefix + "00000000f002" // wheat sample: the grain-sample example
	demoFileCattle = demoIDPrefix + "00000000f003" // the cattle example's photo
	demoFileEwes   = demoIDPrefix + "00000000f004" // the sheep example's photo; the download and info examples
	demoFileSpare  = demoIDPrefix + "00000000f005" // the delete example's file

	demoLoadPrefix = demoIDPrefix + "000000000" // + 101..105, as the loads' references HF-2026-101..105

	demoListingPrefix = demoIDPrefix + "00000000a" // + 001..010, in the order of demoListings

	demoConversation        = demoIDPrefix + "00000000c001" // buyer and farmer
	demoListingConversation = demoIDPrefix + "00000000c002" // about the ewes
	demoSavedSearch         = demoIDPrefix + "00000000e001" // the delete example's saved search
	demoUploadAppend        = demoIDPrefix + "00000000b001" // the append (PATCH) example's tus upload
	demoUploadTerminate     = demoIDPrefix + "00000000b002" // the terminate (DELETE) example's tus upload
	demoShortCode           = "HillFarm"                    // the short link to the ewes' listing

	// demoUploadMetadata is the tus uploads' Upload-Metadata: bucket files,
	// type contract, name flock-record.pdf.
	demoUploadMetadata = "bucket ZmlsZXM=,type Y29udHJhY3Q=,name ZmxvY2stcmVjb3JkLnBkZg=="
)
