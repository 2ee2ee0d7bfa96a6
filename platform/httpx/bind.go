package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// BindJSON decodes the JSON body into dst. Malformed JSON answers bad_request;
// a value of the wrong JSON type answers validation_failed naming the field.
func BindJSON(c *gin.Context, dst any) error {
	raw, err := ReadJSONBody(c)
	if err != nil {
		return err
	}
	return decodeJSON(raw, "", dst)
}

// DecodeJSON checks raw with CheckJSON and decodes it into dst, reporting
// failures under prefix.
func DecodeJSON(raw []byte, prefix string, dst any) error {
	if err := CheckJSON(raw, prefix); err != nil {
		return err
	}
	return decodeJSON(raw, prefix, dst)
}

// decodeJSON decodes raw that CheckJSON has passed into dst, reporting type
// errors under prefix.
func decodeJSON(raw []byte, prefix string, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(dst); err != nil {
		return jsonError(err, prefix)
	}
	if dec.More() {
		return apierr.BadRequest("the request body has data after the JSON value")
	}
	return nil
}

func jsonError(err error, prefix string) error {
	var (
		syntax  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntax):
		return apierr.Wrap(err, apierr.CodeBadRequest, "the request body is not valid JSON (at byte %d)", syntax.Offset)
	case errors.As(err, &typeErr):
		var f apierr.Fields
		path := typeErr.Field
		if prefix != "" {
			path = strings.TrimSuffix(prefix+"."+path, ".")
			if typeErr.Field == "" {
				path = prefix
			}
		}
		f.Add(path, "type", fmt.Sprintf("must be %s, not %s", jsonTypeName(typeErr.Type.Kind().String()), typeErr.Value), map[string]any{"expected": jsonTypeName(typeErr.Type.Kind().String()), "actual": typeErr.Value})
		return f.Err()
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return apierr.Wrap(err, apierr.CodeBadRequest, "the request body is not valid JSON (it ends too soon)")
	default:
		return apierr.Wrap(err, apierr.CodeBadRequest, "the request body is not valid JSON")
	}
}

func jsonTypeName(kind string) string {
	switch kind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	default:
		return kind
	}
}

// BindOneOrMany decodes a body that is one object or an array of them. An array
// reports type errors as "[i].field" and may hold at most max items.
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
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		var one T
		if err := decodeJSON(raw, "", &one); err != nil {
			return nil, false, err
		}
		return []T{one}, false, nil
	}
	var elems []json.RawMessage
	if err := decodeJSON(raw, "", &elems); err != nil {
		return nil, true, err
	}
	var f apierr.Fields
	if len(elems) == 0 {
		f.Add("", "min_items", "must hold at least one item", map[string]any{"min": 1})
		return nil, true, f.Err()
	}
	if len(elems) > max {
		f.Add("", "max_items", fmt.Sprintf("must hold at most %d items", max), map[string]any{"max": max, "actual": len(elems)})
		return nil, true, f.Err()
	}
	items = make([]T, len(elems))
	for i, e := range elems {
		if err := decodeJSON(e, fmt.Sprintf("[%d]", i), &items[i]); err != nil {
			if ae, ok := apierr.As(err); ok && ae.Code == apierr.CodeValidation {
				f.Merge(ae.Validation)
				continue
			}
			return nil, true, err
		}
	}
	return items, true, f.Err()
}
