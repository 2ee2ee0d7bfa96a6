package httpx

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agritrade/api/platform/apierr"
)

// The binder: every JSON body of the API goes into a Go struct this one way.
// The body is parsed once into a generic tree (numbers kept as text), and the
// tree is walked against the destination's type by reflection, assigning as
// it goes. Unlike encoding/json, which stops at the first wrong type and drops
// unknown members silently, the walk goes on past a failure and reports each
// one by its full path ("price.pricePerUnit.amount", "[2].weight",
// "files[0].id"):
//
//   - a value of the wrong JSON type: code "type", data {expected, actual};
//     the field keeps its zero value;
//   - a number that does not fit its Go type: code "range" (a fraction for an
//     integer is a "type");
//   - a member the destination has no field for: code "unknown_field", data
//     {allowed}: a misspelt member must not be dropped silently (like
//     Stripe's "Received unknown parameter").
//
// null leaves a field at its zero value (a pointer, slice or map nil), as
// encoding/json does; Nullable tells a member sent as null from one not sent.
// Types with their own UnmarshalJSON are given their part of the body; those
// that are also text (time.Time, encoding.TextUnmarshaler) must be strings.
// Member names match the json tags exactly (case matters).
//
// When the binder finds failures and the destination is a Validator, its
// Validate completes the answer: a wrong type in one member and a missing one
// in another are named at once (except at or under a path the binder already
// failed: a field of the wrong type is not also "required"). When the types
// are clean the binder says nothing more: the feature runs its checks in its
// own flow, with those that need the database, as it must anyway.

// Validator is a bound body that checks itself beyond JSON types: it records
// every failing field in f (paths relative to the body). The binder calls it
// only to complete an answer that already fails (see above).
type Validator interface {
	Validate(f *apierr.Fields)
}

// Codes of the binder's validation entries.
const (
	CodeType         = "type"
	CodeUnknownField = "unknown_field"
)

// maxBindProblems caps the entries the binder records for one body, so that a
// list of 1000 wrong items gets a small answer.
const maxBindProblems = 100

// Nullable is a JSON member that tells "absent" (Set false) from null (Set,
// Value nil) from a value: members that are required but may be null, and
// edits where null clears a value and absence keeps it.
type Nullable[T any] struct {
	Set   bool
	Value *T
}

// NullableOf returns a set Nullable holding v.
func NullableOf[T any](v T) Nullable[T] { return Nullable[T]{Set: true, Value: &v} }

// Null tells whether the member was sent as null.
func (n Nullable[T]) Null() bool { return n.Set && n.Value == nil }

// bindTarget gives the binder the parts to fill.
func (n *Nullable[T]) bindTarget() (set *bool, value any) { return &n.Set, &n.Value }

// UnmarshalJSON records that the member was present and decodes it unless
// null (for decoders other than the binder).
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		n.Value = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	n.Value = &v
	return nil
}

// MarshalJSON renders the value, or null (an absent member cannot be told
// apart once rendered; omit the field to leave it out).
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if n.Value == nil {
		return []byte("null"), nil
	}
	return json.Marshal(n.Value)
}

type nullable interface{ bindTarget() (*bool, any) }

var (
	nullableType    = reflect.TypeFor[nullable]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// binder walks one tree (or the items of a list body); problems counts the
// entries recorded, failed keeps their paths for the Validator merge.
type binder struct {
	f        *apierr.Fields
	path     []pathSeg
	problems int
	failed   []string
}

// pathSeg is a member name, or an index when key is "" and index ≥ 0.
type pathSeg struct {
	key   string
	index int
}

// bindValidate binds v into dst (a pointer), recording in f; when that
// failed, a Validator dst completes the answer.
func (b *binder) bindValidate(v any, dst any, f *apierr.Fields) {
	if failed := b.bind(v, dst, f); len(failed) > 0 {
		validate(dst, f, failed)
	}
}

// bind binds v into dst (a pointer), recording in f, and answers the paths
// that failed.
func (b *binder) bind(v any, dst any, f *apierr.Fields) []string {
	b.f, b.path, b.failed = f, b.path[:0], nil
	rv := reflect.ValueOf(dst).Elem()
	if v == nil && rv.Kind() != reflect.Pointer && !reflect.PointerTo(rv.Type()).Implements(nullableType) {
		// A null body is not an object (or whatever the body must be).
		b.typeError(expected(rv.Type()), v)
	} else {
		b.value(v, rv, infoOf(rv.Type()))
	}
	return b.failed
}

// validate adds what a Validator dst finds to f, except at or under the
// paths the binder failed.
func validate(dst any, f *apierr.Fields, failed []string) {
	val, ok := dst.(Validator)
	if !ok {
		return
	}
	var vf apierr.Fields
	val.Validate(&vf)
	for _, fe := range vf.List() {
		if !covered(failed, fe.Path) {
			f.Add(fe.Path, fe.Code, fe.Message, fe.Data)
		}
	}
}

// covered tells whether path is at or under one of failed.
func covered(failed []string, path string) bool {
	for _, p := range failed {
		if p == "" || path == p || (strings.HasPrefix(path, p) && (path[len(p)] == '.' || path[len(p)] == '[')) {
			return true
		}
	}
	return false
}

func (b *binder) pathString() string {
	var sb strings.Builder
	for _, s := range b.path {
		if s.key == "" && s.index >= 0 {
			sb.WriteByte('[')
			sb.WriteString(strconv.Itoa(s.index))
			sb.WriteByte(']')
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(s.key)
	}
	return sb.String()
}

func (b *binder) fail(code, msg string, data map[string]any) {
	p := b.pathString()
	b.failed = append(b.failed, p)
	if b.problems < maxBindProblems {
		b.f.Add(p, code, msg, data)
	}
	b.problems++
}

func (b *binder) typeError(want string, v any) {
	got := jsonKind(v)
	b.fail(CodeType, "must be "+want+", not "+got, map[string]any{"expected": want, "actual": got})
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}

// expected names the JSON a Go type takes, for messages.
func expected(t reflect.Type) string {
	ti := infoOf(t)
	switch {
	case ti.nullable:
		return expected(t.Field(1).Type.Elem())
	case ti.text:
		return "a string"
	case ti.unmarshaler:
		return "a valid value"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return expected(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	default:
		return "a value"
	}
}

// typeInfo is what the walk needs of a type, worked out once.
type typeInfo struct {
	t                           reflect.Type
	nullable, unmarshaler, text bool
	// elem is the typeInfo of what a pointer, slice, array or map holds (a
	// Nullable's value pointer), filled on first use: the walk looks each
	// type up once, not at every value.
	elem   atomic.Pointer[typeInfo]
	fields []*fieldInfo // struct members, in declaration order
	byName map[string]int
	names  []string // sorted member names, for unknown_field's data
}

type fieldInfo struct {
	name  string
	index []int
	ti    atomic.Pointer[typeInfo]
}

// lazy answers the typeInfo of t kept in p, looking it up the first time.
func lazy(p *atomic.Pointer[typeInfo], t reflect.Type) *typeInfo {
	if ti := p.Load(); ti != nil {
		return ti
	}
	ti := infoOf(t)
	p.Store(ti)
	return ti
}

var typeInfos sync.Map // reflect.Type → *typeInfo

func infoOf(t reflect.Type) *typeInfo {
	if ti, ok := typeInfos.Load(t); ok {
		return ti.(*typeInfo)
	}
	pt := reflect.PointerTo(t)
	ti := &typeInfo{t: t, nullable: pt.Implements(nullableType)}
	if !ti.nullable && t.Kind() != reflect.Pointer {
		ti.unmarshaler = pt.Implements(unmarshalerType)
		ti.text = pt.Implements(textType)
	}
	if t.Kind() == reflect.Struct && !ti.nullable && !ti.unmarshaler && !ti.text {
		ti.byName = map[string]int{}
		collectFields(t, nil, ti)
		slices.Sort(ti.names)
	}
	actual, _ := typeInfos.LoadOrStore(t, ti)
	return actual.(*typeInfo)
}

// collectFields lists the exported members of a struct by json name;
// embedded structs without a tag add their members (as encoding/json does).
func collectFields(t reflect.Type, index []int, ti *typeInfo) {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		idx := append(slices.Clone(index), i)
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if sf.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			collectFields(ft, idx, ti)
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if _, dup := ti.byName[name]; dup {
			continue // the shallower field wins
		}
		ti.byName[name] = len(ti.fields)
		ti.fields = append(ti.fields, &fieldInfo{name: name, index: idx})
		ti.names = append(ti.names, name)
	}
}

// field answers the member at index, allocating embedded pointers on the way.
func field(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// value binds the tree v into rv (settable).
func (b *binder) value(v any, rv reflect.Value, ti *typeInfo) {
	t := ti.t
	if ti.nullable {
		set, val := rv.Addr().Interface().(nullable).bindTarget()
		*set = true
		if v != nil {
			target := reflect.ValueOf(val).Elem()
			b.value(v, target, lazy(&ti.elem, target.Type()))
		}
		return
	}
	if v == nil {
		// null: a type with its own decoding decides (json.RawMessage keeps
		// it); pointers, slices, maps and interfaces become nil; other kinds
		// keep their zero value (encoding/json's rules).
		switch {
		case ti.unmarshaler:
			b.unmarshal(v, rv, ti)
		case t.Kind() == reflect.Pointer, t.Kind() == reflect.Slice, t.Kind() == reflect.Map, t.Kind() == reflect.Interface:
			rv.SetZero()
		}
		return
	}
	if t.Kind() == reflect.Pointer {
		if rv.IsNil() {
			rv.Set(reflect.New(t.Elem()))
		}
		b.value(v, rv.Elem(), lazy(&ti.elem, t.Elem()))
		return
	}
	if ti.unmarshaler || ti.text {
		b.unmarshal(v, rv, ti)
		return
	}
	switch t.Kind() {
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			b.typeError("a string", v)
			return
		}
		rv.SetString(s)
	case reflect.Bool:
		x, ok := v.(bool)
		if !ok {
			b.typeError("a boolean", v)
			return
		}
		rv.SetBool(x)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.integer(v, rv, false)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b.integer(v, rv, true)
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			b.typeError("a number", v)
			return
		}
		x, err := strconv.ParseFloat(string(n), t.Bits())
		if err != nil {
			b.fail("range", "is not a representable number", map[string]any{"actual": string(n)})
			return
		}
		rv.SetFloat(x)
	case reflect.Slice:
		b.slice(v, rv, ti)
	case reflect.Array:
		a, ok := v.([]any)
		if !ok {
			b.typeError("an array", v)
			return
		}
		if len(a) > rv.Len() {
			b.fail("max_items", "must hold at most "+itoa(rv.Len())+" items", map[string]any{"max": rv.Len(), "actual": len(a)})
			return
		}
		b.items(a, rv, lazy(&ti.elem, t.Elem()))
	case reflect.Map:
		b.mapValue(v, rv, lazy(&ti.elem, t.Elem()))
	case reflect.Struct:
		b.object(v, rv, ti)
	case reflect.Interface:
		if t.NumMethod() > 0 {
			b.typeError(expected(t), v)
			return
		}
		x, ok := plain(v)
		if !ok {
			b.fail("range", "holds a number that is not representable", nil)
			return
		}
		if x != nil {
			rv.Set(reflect.ValueOf(x))
		}
	default:
		b.typeError(expected(t), v)
	}
}

func (b *binder) integer(v any, rv reflect.Value, unsigned bool) {
	n, ok := v.(json.Number)
	if !ok {
		b.typeError("an integer", v)
		return
	}
	s := string(n)
	if unsigned {
		if u, err := strconv.ParseUint(s, 10, 64); err == nil && !rv.OverflowUint(u) {
			rv.SetUint(u)
			return
		}
	} else if i, err := strconv.ParseInt(s, 10, 64); err == nil && !rv.OverflowInt(i) {
		rv.SetInt(i)
		return
	}
	// Not a plain integer: 1e3 is one (as a number it is exact), 1.5 is not.
	x, err := strconv.ParseFloat(s, 64)
	switch {
	case err == nil && x != math.Trunc(x):
		b.fail(CodeType, "must be an integer, not a fraction", map[string]any{"expected": "an integer", "actual": "number"})
		return
	case err == nil && math.Abs(x) < 1<<53:
		if unsigned && x >= 0 && !rv.OverflowUint(uint64(x)) {
			rv.SetUint(uint64(x))
			return
		}
		if !unsigned && !rv.OverflowInt(int64(x)) {
			rv.SetInt(int64(x))
			return
		}
	}
	lo, hi := intRange(rv.Type())
	b.fail("range", "must be an integer between "+lo+" and "+hi, map[string]any{"min": lo, "max": hi, "actual": s})
}

func intRange(t reflect.Type) (lo, hi string) {
	bits := t.Bits()
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "0", strconv.FormatUint(1<<bits-1, 10)
	}
	return strconv.FormatInt(-1<<(bits-1), 10), strconv.FormatInt(1<<(bits-1)-1, 10)
}

func (b *binder) slice(v any, rv reflect.Value, ti *typeInfo) {
	t := rv.Type()
	if t.Elem().Kind() == reflect.Uint8 {
		s, ok := v.(string)
		if !ok {
			b.typeError("a base64 string", v)
			return
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			b.fail("format", "must be base64 (RFC 4648)", nil)
			return
		}
		rv.SetBytes(raw)
		return
	}
	a, ok := v.([]any)
	if !ok {
		b.typeError("an array", v)
		return
	}
	s := reflect.MakeSlice(t, len(a), len(a))
	b.items(a, s, lazy(&ti.elem, t.Elem()))
	rv.Set(s)
}

func (b *binder) items(a []any, rv reflect.Value, elem *typeInfo) {
	b.path = append(b.path, pathSeg{index: 0})
	last := len(b.path) - 1
	for i, e := range a {
		b.path[last] = pathSeg{index: i}
		b.value(e, rv.Index(i), elem)
	}
	b.path = b.path[:last]
}

func (b *binder) mapValue(v any, rv reflect.Value, elem *typeInfo) {
	m, ok := v.(map[string]any)
	if !ok {
		b.typeError("an object", v)
		return
	}
	t := rv.Type()
	if rv.IsNil() {
		rv.Set(reflect.MakeMapWithSize(t, len(m)))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // failures in a stable order
	for _, k := range keys {
		b.path = append(b.path, pathSeg{key: k, index: -1})
		key := reflect.New(t.Key()).Elem()
		switch t.Key().Kind() {
		case reflect.String:
			key.SetString(k)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			b.integer(json.Number(k), key, t.Key().Kind() >= reflect.Uint)
		default:
			b.fail(CodeUnknownField, "is not a key this object takes", nil)
		}
		ev := reflect.New(t.Elem()).Elem()
		b.value(m[k], ev, elem)
		rv.SetMapIndex(key, ev)
		b.path = b.path[:len(b.path)-1]
	}
}

func (b *binder) object(v any, rv reflect.Value, ti *typeInfo) {
	m, ok := v.(map[string]any)
	if !ok {
		b.typeError("an object", v)
		return
	}
	matched := 0
	for _, fi := range ti.fields {
		e, present := m[fi.name]
		if !present {
			continue
		}
		matched++
		b.path = append(b.path, pathSeg{key: fi.name, index: -1})
		fv := field(rv, fi.index)
		b.value(e, fv, lazy(&fi.ti, fv.Type()))
		b.path = b.path[:len(b.path)-1]
	}
	if matched == len(m) {
		return
	}
	var unknown []string
	for k := range m {
		if _, ok := ti.byName[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		b.path = append(b.path, pathSeg{key: k, index: -1})
		msg := "is not a field of this object"
		for _, name := range ti.names {
			if strings.EqualFold(name, k) {
				msg += " (did you mean " + name + "?)"
				break
			}
		}
		b.fail(CodeUnknownField, msg, map[string]any{"allowed": ti.names})
		b.path = b.path[:len(b.path)-1]
	}
}

// unmarshal hands a type with its own decoding its part of the body: text
// types (time.Time, encoding.TextUnmarshaler) take strings only.
func (b *binder) unmarshal(v any, rv reflect.Value, ti *typeInfo) {
	s, isString := v.(string)
	if ti.text && v != nil && !isString {
		b.typeError("a string", v)
		return
	}
	var err error
	switch {
	case ti.unmarshaler:
		var raw []byte
		if raw, err = json.Marshal(v); err == nil {
			err = rv.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(raw)
		}
	default:
		err = rv.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
	}
	if err == nil {
		return
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		b.typeError(expected(te.Type), v)
		return
	}
	b.fail("format", "is not valid: "+err.Error(), nil)
}

// plain turns a tree into what encoding/json gives an interface: numbers as
// float64; false when a number is not representable.
func plain(v any) (any, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case []any:
		for i := range x {
			var ok bool
			if x[i], ok = plain(x[i]); !ok {
				return nil, false
			}
		}
	case map[string]any:
		for k := range x {
			var ok bool
			if x[k], ok = plain(x[k]); !ok {
				return nil, false
			}
		}
	}
	return v, true
}

func itoa(n int) string { return strconv.Itoa(n) }
