package logistics

// Version is the logistics module's semantic version; the release tag logistics/v<Version>
// must agree with it (make release-check).
const Version = "1.0.0"
