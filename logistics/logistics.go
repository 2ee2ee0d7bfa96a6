// Package logistics is the Logistics module: loads (haulage jobs): creation, search, hand-offs to drivers and carriers, batch import, export and proof of delivery.
package logistics

import (
	"context"
	"embed"
	"io/fs"

	"github.com/agritrade/api/logistics/internal/imports"
	"github.com/agritrade/api/logistics/internal/loads"
	"github.com/agritrade/api/platform/auth"
	"github.com/agritrade/api/platform/module"
)

// Name is the module's path segment and log name.
const Name = "logistics"

//go:embed openapi.yaml
var openapiYAML []byte

//go:embed migrations
var migrationFiles embed.FS

// Commodities is what the module needs of the reference data: a commodity item
// by its integer id, with its default weight unit (name and conversion to kg).
// cmd wires the System module, which owns the reference data.
type Commodities interface {
	LookupCommodity(ctx context.Context, id int) (name, unitName string, conversion float64, found bool, err error)
}

// Module is the Logistics module.
type Module struct {
	module.Base
	loads   *loads.Feature
	imports *imports.Feature
}

// New builds the module over the platform's shared parts and the reference
// data's commodities.
func New(deps module.Deps, commodities Commodities) *Module {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	lookup := func(ctx context.Context, id int) (loads.Commodity, bool, error) {
		name, unit, conversion, found, err := commodities.LookupCommodity(ctx, id)
		return loads.Commodity{ID: id, Name: name, Unit: unit, Conversion: conversion}, found, err
	}
	// A feature refuses only missing dependencies: a wiring mistake, like a
	// missing embedded directory above.
	l, err := loads.New(loads.Deps{DB: deps.DB, Commodities: lookup, Files: deps.Files, Log: deps.Log.Component("loads"), MaxItems: deps.Config.HTTP.MaxListItems})
	if err != nil {
		panic(err)
	}
	im, err := imports.New(imports.Deps{Loads: l.Service, Log: deps.Log.Component("loads:import"), MaxUpload: deps.Config.Files.MaxUploadMB << 20, Imports: deps.Imports})
	if err != nil {
		panic(err)
	}
	return &Module{
		Base:    module.Base{ModuleName: Name, ModuleVersion: Version, MigrationFS: sub, Document: openapiYAML},
		loads:   l,
		imports: im,
	}
}

// Mount binds the module's routes; every load route needs a token.
func (m *Module) Mount(r module.Routes) {
	g := r.API.Group("/loads", auth.RequireAuth())
	m.loads.Mount(g)
	m.imports.Mount(g)
}
