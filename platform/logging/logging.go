// Package logging gives every module its own logrus logger whose level and
// component filter operators change at run time.
//
// A module logs through components ("files", "loads:import"); the module's
// filter, a comma-separated list of patterns, selects which components write.
// Filtering happens in the formatter, so components keep their entries for the
// whole process and still follow every change.
package logging

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"
)

// ComponentField is the entry field that names the component that logged.
const ComponentField = "component"

// ModuleField is the entry field that names the module that logged.
const ModuleField = "module"

// Settings is the runtime log setting of one module.
type Settings struct {
	Level  string `json:"level"`
	Filter string `json:"filter"`
}

// Registry owns the loggers of every module and of the platform.
type Registry struct {
	mu      sync.RWMutex
	out     io.Writer
	format  string
	level   logrus.Level
	modules map[string]*Module
}

// NewRegistry makes a registry writing to out ("json" or "text" format) with a
// default level for modules that set none.
func NewRegistry(out io.Writer, format, level string) (*Registry, error) {
	if out == nil {
		out = os.Stderr
	}
	lvl, err := ParseLevel(level)
	if err != nil {
		return nil, err
	}
	if format != "json" && format != "text" {
		return nil, fmt.Errorf("log format %q: want json or text", format)
	}
	return &Registry{out: out, format: format, level: lvl, modules: map[string]*Module{}}, nil
}

// ParseLevel parses a logrus level name, rejecting the empty string.
func ParseLevel(s string) (logrus.Level, error) {
	if strings.TrimSpace(s) == "" {
		return 0, fmt.Errorf("log level is empty")
	}
	return logrus.ParseLevel(strings.TrimSpace(s))
}

// Module returns the logger of a module, creating it at the default level.
func (r *Registry) Module(name string) *Module {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.modules[name]; ok {
		return m
	}
	m := &Module{name: name, logger: logrus.New()}
	m.logger.SetOutput(r.out)
	m.logger.SetLevel(r.level)
	m.logger.SetFormatter(&filteringFormatter{inner: r.newFormatter(), module: m})
	m.logger.AddHook(contextHook{})
	r.modules[name] = m
	return m
}

// Follow makes the logger named follower take the settings of the module
// named leader, now and on every later Apply of the leader. The platform's
// shared components (file store, cache, outbox, bus...) have no settings
// route of their own; following a module puts them under that module's
// runtime settings while their entries keep their own module name.
func (r *Registry) Follow(follower, leader string) {
	f, l := r.Module(follower), r.Module(leader)
	if f == l {
		return
	}
	l.mu.Lock()
	l.followers = append(l.followers, f)
	lvl, level, filter := l.logger.GetLevel(), l.level, l.filter
	l.mu.Unlock()
	f.mu.Lock()
	f.set(lvl, level, filter)
	f.mu.Unlock()
}

func (r *Registry) newFormatter() logrus.Formatter {
	if r.format == "json" {
		return &logrus.JSONFormatter{TimestampFormat: "2006-01-02T15:04:05.000Z07:00"}
	}
	return &logrus.TextFormatter{FullTimestamp: true, TimestampFormat: "15:04:05.000"}
}

// Module is one module's logger with its runtime settings.
type Module struct {
	name   string
	logger *logrus.Logger
	mu     sync.RWMutex
	filter Filter
	raw    string
	// level is the level as an operator spelled it ("warn", not logrus's
	// "warning"), so that what was set reads back unchanged.
	level string
	// followers take every setting applied to this module (Registry.Follow).
	followers []*Module
	// components holds each component's entry, made once: an entry is never
	// changed by logging through it (logrus copies it first), and Component
	// is called on every request.
	components sync.Map // component name -> *logrus.Entry
}

// Name is the module's name.
func (m *Module) Name() string { return m.name }

// Logger is the module's logrus logger (entries without a component always pass the filter).
func (m *Module) Logger() *logrus.Logger { return m.logger }

// Entry returns an entry tagged with the module name.
func (m *Module) Entry() *logrus.Entry { return m.logger.WithField(ModuleField, m.name) }

// Component returns an entry for a component of the module; whether it writes
// is decided per entry by the module's current filter.
func (m *Module) Component(name string) *logrus.Entry {
	if e, ok := m.components.Load(name); ok {
		return e.(*logrus.Entry)
	}
	e, _ := m.components.LoadOrStore(name, m.logger.WithFields(logrus.Fields{ModuleField: m.name, ComponentField: name}))
	return e.(*logrus.Entry)
}

// Settings returns the current level and filter.
func (m *Module) Settings() Settings {
	m.mu.RLock()
	defer m.mu.RUnlock()
	level := m.level
	if level == "" {
		level = m.logger.GetLevel().String()
	}
	return Settings{Level: level, Filter: m.raw}
}

// Apply validates and sets a level and filter at once; on error nothing changes.
func (m *Module) Apply(s Settings) error {
	lvl, err := ParseLevel(s.Level)
	if err != nil {
		return err
	}
	f, err := ParseFilter(s.Filter)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.set(lvl, strings.ToLower(strings.TrimSpace(s.Level)), f)
	followers := m.followers
	m.mu.Unlock()
	for _, fl := range followers {
		fl.mu.Lock()
		fl.set(lvl, strings.ToLower(strings.TrimSpace(s.Level)), f)
		fl.mu.Unlock()
	}
	return nil
}

// set installs validated settings; the caller holds m.mu.
func (m *Module) set(lvl logrus.Level, level string, f Filter) {
	m.logger.SetLevel(lvl)
	m.level = level
	m.filter = f
	m.raw = f.String()
}

// Enabled tells whether a component of the module passes the filter.
func (m *Module) Enabled(component string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.filter.Allows(component)
}

// filteringFormatter drops the entries of filtered-out components: logrus
// writes whatever the formatter returns, and an empty slice writes nothing.
type filteringFormatter struct {
	inner  logrus.Formatter
	module *Module
}

func (f *filteringFormatter) Format(e *logrus.Entry) ([]byte, error) {
	if c, ok := e.Data[ComponentField].(string); ok && !f.module.Enabled(c) {
		return nil, nil
	}
	return f.inner.Format(e)
}
