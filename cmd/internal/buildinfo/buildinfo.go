// Package buildinfo carries the build description stamped by the linker
// (-X github.com/agritrade/api/cmd/internal/buildinfo.Version=$(git describe)).
package buildinfo

// Version is the `git describe` of the build, or "dev".
var Version = "dev"
