package livestock

// Version is the livestock module's semantic version; the release tag livestock/v<Version>
// must agree with it (make release-check).
const Version = "1.0.0"
