package system

// Version is the system module's semantic version; the release tag system/v<Version>
// must agree with it (make release-check).
const Version = "1.0.0"
