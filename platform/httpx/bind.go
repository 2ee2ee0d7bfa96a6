package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"strings"

	"github.com/agritrade/api/platform/apierr"
	"github.com/gin-gonic/gin"
)

// DefaultMaxListItems caps list bodies (API.md: at most 1000 items).
const DefaultMaxListItems = 1000

// ReadJSONBody reads the whole (size-limited) JSON body, keeps it for the
// error echo and checks it with CheckJSON: nesting beyond MaxJSONDepth and
// strings that cannot be stored answer 400 before any decoder sees the body.
func ReadJSONBody(c *gin.Context) ([]byte, error) {
	ct := c.GetHeader("Content-Type")
	if ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, apierr.BadRequest("the request body must be JSON (Content-Type: application/json)")
		}
	}
	if c.Request.Body == nil {
		return nil, apierr.BadRequest("the request body is required")
	}
	raw, err := io.ReadAll(c.Request.Body)
	if err != nil {
		if IsTooLarge(err) {
			return nil, apierr.New(apierr.CodePayloadTooLarge, "the request body is larger than the limit")
		}
		return nil, apierr.Wrap(err, apierr.CodeBadRequest, "the request body could not be read")
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, apierr.BadRequest("the request body is required")
	}
	c.Set(apierr.BodyKey, raw)
	if err := CheckJSON(raw, ""); err != nil {
		return nil, err
	}
	return raw, nil
}

// BindJSON reads the JSON body into dst (a pointer) with the binder (see
// Decode): malformed JSON answers bad_request; every member of the wrong JSON
// type and every unknown member answer validation_failed at once, with what
// dst's Validate finds when dst is a Validator.
func BindJSON(c *gin.Context, dst any) error {
	raw, err := ReadJSONBody(c)
	if err != nil {
		return err
	}
	f, err := decodeChecked(raw, dst)
	if err != nil {
		return err
	}
	return f.Err()
}

// DecodeJSON is BindJSON on raw bytes: it checks raw with CheckJSON and binds
// it into dst.
func DecodeJSON(raw []byte, dst any) error {
	if err := CheckJSON(raw, ""); err != nil {
		return err
	}
	f, err := decodeChecked(raw, dst)
	if err != nil {
		return err
	}
	return f.Err()
}

// Decode binds raw JSON that ReadJSONBody (or CheckJSON) has passed into dst
// and answers what failed, for a feature that completes the list with checks
// of its own before it answers them all at once (the error is a bad_request
// for malformed JSON). See Bind for what the binder checks.
func Decode(raw []byte, dst any) (*apierr.Fields, error) {
	return decodeChecked(raw, dst)
}

func decodeChecked(raw []byte, dst any) (*apierr.Fields, error) {
	tree, err := parseTree(raw)
	if err != nil {
		return nil, err
	}
	f := &apierr.Fields{}
	b := binder{}
	b.bindValidate(tree, dst, f)
	return f, nil
}

// parseTree reads one JSON value into a generic tree, numbers kept as their
// text (json.Number) so that each is judged by the Go type it goes into.
func parseTree(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, syntaxError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, apierr.BadRequest("the request body has data after the JSON value")
	}
	return v, nil
}

func syntaxError(err error) error {
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return apierr.Wrap(err, apierr.CodeBadRequest, "the request body is not valid JSON (at byte %d)", syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return apierr.Wrap(err, apierr.CodeBadRequest, "the request body is not valid JSON (it ends too soon)")
	default:
		return apierr.Wrap(err, apierr.CodeBadRequest, "the request body is not valid JSON")
	}
}

// BindOneOrMany decodes a body that is one object or an array of them. An array
// reports failures as "[i].field" and may hold at most max items.
func BindOneOrMany[T any](c *gin.Context, max int) (items []T, isList bool, err error) {
	raw, err := ReadJSONBody(c)
	if err != nil {
		return nil, false, err
	}
	return decodeOneOrMany[T](raw, max)
}

// DecodeOneOrMany is BindOneOrMany on raw bytes.
func DecodeOneOrMany[T any](raw []byte, max int) (items []T, isList bool, err error) {
	if err := CheckJSON(raw, ""); err != nil {
		return nil, false, err
	}
	return decodeOneOrMany[T](raw, max)
}

func decodeOneOrMany[T any](raw []byte, max int) (items []T, isList bool, err error) {
	if max <= 0 {
		max = DefaultMaxListItems
	}
	tree, err := parseTree(raw)
	if err != nil {
		return nil, false, err
	}
	var (
		f apierr.Fields
		b binder
	)
	elems, isList := tree.([]any)
	if !isList {
		items = make([]T, 1)
		b.bindValidate(tree, &items[0], &f)
		return items, false, f.Err()
	}
	if len(elems) == 0 {
		f.Add("", "min_items", "must hold at least one item", map[string]any{"min": 1})
		return nil, true, f.Err()
	}
	if len(elems) > max {
		f.Add("", "max_items", "must hold at most "+itoa(max)+" items", map[string]any{"max": max, "actual": len(elems)})
		return nil, true, f.Err()
	}
	items = make([]T, len(elems))
	failed := make([][]string, len(elems))
	anyFailed := false
	for i, e := range elems {
		failed[i] = b.bind(e, &items[i], f.Index(i))
		anyFailed = anyFailed || len(failed[i]) > 0
	}
	if anyFailed {
		// The body fails: every item's own checks complete the answer.
		for i := range items {
			validate(&items[i], f.Index(i), failed[i])
		}
	}
	return items, true, f.Err()
}
