package apierr

import (
	"fmt"
	"strconv"
	"strings"
)

// Fields collects field errors so that a request reports every failing field at
// once. The zero value is ready to use.
type Fields struct {
	prefix string
	list   *[]FieldError
}

// Add records a failing field.
func (f *Fields) Add(path, code, message string, data map[string]any) {
	if f.list == nil {
		f.list = &[]FieldError{}
	}
	if data == nil {
		data = map[string]any{}
	}
	*f.list = append(*f.list, FieldError{Path: join(f.prefix, path), Message: message, Code: code, Data: data})
}

// Addf records a failing field with a formatted message.
func (f *Fields) Addf(path, code, format string, args ...any) {
	f.Add(path, code, fmt.Sprintf(format, args...), nil)
}

// Merge appends field errors produced elsewhere, under this collector's prefix.
func (f *Fields) Merge(fields []FieldError) {
	for _, fe := range fields {
		f.Add(fe.Path, fe.Code, fe.Message, fe.Data)
	}
}

// At returns a collector that writes into the same list with a path prefix:
// At("properties").At("health") records "properties.health.x".
func (f *Fields) At(prefix string) *Fields {
	if f.list == nil {
		f.list = &[]FieldError{}
	}
	return &Fields{prefix: join(f.prefix, prefix), list: f.list}
}

// Index returns a collector for the i-th element of a list: "[i]" or "items[i]".
func (f *Fields) Index(i int) *Fields {
	if f.list == nil {
		f.list = &[]FieldError{}
	}
	return &Fields{prefix: f.prefix + "[" + strconv.Itoa(i) + "]", list: f.list}
}

// Required records a "required" error when the string is blank.
func (f *Fields) Required(path, value string) bool {
	if strings.TrimSpace(value) == "" {
		f.Add(path, "required", "is required", nil)
		return false
	}
	return true
}

// MaxLen records a "max_length" error when the value has more than max characters.
func (f *Fields) MaxLen(path, value string, max int) bool {
	if n := len([]rune(value)); n > max {
		f.Add(path, "max_length", fmt.Sprintf("must be at most %d characters", max), map[string]any{"max": max, "actual": n})
		return false
	}
	return true
}

// OneOf records an "enum" error when value is not one of allowed.
func (f *Fields) OneOf(path, value string, allowed ...string) bool {
	for _, a := range allowed {
		if value == a {
			return true
		}
	}
	f.Add(path, "enum", "must be one of "+strings.Join(allowed, ", "), map[string]any{"allowed": allowed, "actual": value})
	return false
}

// Check records an error with the given code and message when ok is false.
func (f *Fields) Check(ok bool, path, code, message string) bool {
	if !ok {
		f.Add(path, code, message, nil)
	}
	return ok
}

// Empty tells whether nothing failed.
func (f *Fields) Empty() bool { return f.list == nil || len(*f.list) == 0 }

// List returns the collected field errors.
func (f *Fields) List() []FieldError {
	if f.list == nil {
		return nil
	}
	return *f.list
}

// Err returns a validation error listing every collected field, or nil.
func (f *Fields) Err() error {
	if f.Empty() {
		return nil
	}
	return Invalid(*f.list...)
}

func join(prefix, path string) string {
	switch {
	case prefix == "":
		return path
	case path == "":
		return prefix
	case strings.HasPrefix(path, "["):
		return prefix + path
	default:
		return prefix + "." + path
	}
}
