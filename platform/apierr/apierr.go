// Package apierr defines the typed errors every layer returns and the single
// gin middleware that renders them as the API's error body.
//
// Services return *Error values (or wrap them); handlers never write error JSON
// themselves. Anything that is not an *Error becomes a generic 500 whose details
// stay in the log, unless a dependency's Classifier says it means that
// dependency is down: then it is 503 unavailable with Retry-After.
package apierr

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is the machine-readable error code of the error body.
type Code string

// The codes of API.md, each bound to one HTTP status.
const (
	CodeValidation       Code = "validation_failed"
	CodeBadRequest       Code = "bad_request"
	CodeUnauthorized     Code = "unauthorized"
	CodeForbidden        Code = "forbidden"
	CodeNotFound         Code = "not_found"
	CodeMethodNotAllowed Code = "method_not_allowed"
	CodeConflict         Code = "conflict"
	// CodeIdempotencyKeyReused is an Idempotency-Key sent again with another
	// request (platform/idempotency).
	CodeIdempotencyKeyReused Code = "idempotency_key_reused"
	CodePayloadTooLarge      Code = "payload_too_large"
	CodeUnsupportedMedia     Code = "unsupported_media_type"
	CodeRateLimited          Code = "rate_limited"
	CodeInternal             Code = "internal"
	CodeUnavailable          Code = "unavailable"
)

var statusOf = map[Code]int{
	CodeValidation:           http.StatusBadRequest,
	CodeBadRequest:           http.StatusBadRequest,
	CodeUnauthorized:         http.StatusUnauthorized,
	CodeForbidden:            http.StatusForbidden,
	CodeNotFound:             http.StatusNotFound,
	CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	CodeConflict:             http.StatusConflict,
	CodeIdempotencyKeyReused: http.StatusUnprocessableEntity,
	CodePayloadTooLarge:      http.StatusRequestEntityTooLarge,
	CodeUnsupportedMedia:     http.StatusUnsupportedMediaType,
	CodeRateLimited:          http.StatusTooManyRequests,
	CodeInternal:             http.StatusInternalServerError,
	CodeUnavailable:          http.StatusServiceUnavailable,
}

// Status returns the HTTP status bound to the code.
func (c Code) Status() int {
	if s, ok := statusOf[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// FieldError is one entry of the error body's validation list.
type FieldError struct {
	Path    string         `json:"path"`
	Message string         `json:"message"`
	Code    string         `json:"code"`
	Data    map[string]any `json:"data"`
}

// Error is the error value services return. Its exported fields are what the
// client sees; Cause is only logged.
type Error struct {
	Code       Code
	Message    string
	Validation []FieldError
	// RetryAfter, in seconds, sets the Retry-After header on 429 and 503.
	RetryAfter int
	// Cause is the underlying error, logged but never shown to clients.
	Cause error
	// HTTPStatus, when set, replaces the code's status for the few answers
	// whose status has no code of its own (416 Range Not Satisfiable answers
	// bad_request).
	HTTPStatus int
	// TokenProblem, on a 401, says briefly why a bearer token that was sent is
	// refused; it becomes the error_description of the WWW-Authenticate
	// challenge (RFC 6750), with error="invalid_token". Empty when no token
	// was sent: the challenge then carries no error.
	TokenProblem string
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Cause)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap exposes the cause to errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Cause }

// Status is the HTTP status of the error.
func (e *Error) Status() int {
	if e.HTTPStatus != 0 {
		return e.HTTPStatus
	}
	return e.Code.Status()
}

// New builds an error with a code and a human sentence.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap builds an error with a code that keeps cause for the log.
func Wrap(cause error, code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Cause: cause}
}

// NotFound answers 404 for a resource the caller cannot see or that does not exist.
func NotFound(what string) *Error { return New(CodeNotFound, "%s not found", what) }

// BadRequest answers 400 bad_request.
func BadRequest(format string, args ...any) *Error { return New(CodeBadRequest, format, args...) }

// Unauthorized answers 401 to a request that sent no bearer token.
func Unauthorized(format string, args ...any) *Error { return New(CodeUnauthorized, format, args...) }

// InvalidToken answers 401 to a request whose bearer token is refused; reason
// is a short phrase ("the token has expired") that the challenge carries.
func InvalidToken(cause error, reason string) *Error {
	return &Error{Code: CodeUnauthorized, Message: "the bearer token is not valid: " + reason, Cause: cause, TokenProblem: reason}
}

// Forbidden answers 403.
func Forbidden(format string, args ...any) *Error { return New(CodeForbidden, format, args...) }

// Conflict answers 409.
func Conflict(format string, args ...any) *Error { return New(CodeConflict, format, args...) }

// Internal answers a generic 500 and keeps cause for the log.
func Internal(cause error) *Error {
	return &Error{Code: CodeInternal, Message: "internal server error", Cause: cause}
}

// Unavailable answers 503 with a Retry-After hint.
func Unavailable(cause error, what string) *Error {
	return &Error{Code: CodeUnavailable, Message: what + " is unavailable", Cause: cause, RetryAfter: RetryAfterUnavailable}
}

// Invalid answers 400 validation_failed listing every failing field.
func Invalid(fields ...FieldError) *Error {
	return &Error{Code: CodeValidation, Message: validationMessage(fields), Validation: fields}
}

func validationMessage(fields []FieldError) string {
	switch len(fields) {
	case 0:
		return "the request is not valid"
	case 1:
		return fmt.Sprintf("the request is not valid: %s %s", fields[0].Path, fields[0].Message)
	default:
		return fmt.Sprintf("the request is not valid: %d fields failed validation", len(fields))
	}
}

// As returns the *Error inside err, if any.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// IsCode tells whether err carries the given code.
func IsCode(err error, code Code) bool {
	e, ok := As(err)
	return ok && e.Code == code
}
