package main

import (
	"testing"

	"github.com/agritrade/api/cmd/internal/buildinfo"
	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/testkit"
)

// BenchmarkNewServer measures composing the engine (routes, merged OpenAPI),
// the part of start-up that grows with the modules.
func BenchmarkNewServer(b *testing.B) {
	s := testkit.NewServer(b, testkit.DB(b, testkit.SQLite), buildModules, testkit.Options{NoValidate: true})
	mods := buildModules(s.Platform)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := app.NewServer(s.Platform, buildinfo.Version, mods...); err != nil {
			b.Fatal(err)
		}
	}
}
