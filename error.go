// Package ctalk holds the domain vocabulary shared by every ctalk package:
// the error codes that services return and the rules for identifiers.
package ctalk

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Code classifies an error so that the api and web packages can choose an
// HTTP status (HTTPStatus) or a tool error without inspecting messages.
type Code string

// The complete set of error codes. Anything else is reported as EInternal.
const (
	EInvalid      Code = "invalid"
	EUnauthorized Code = "unauthorized"
	EForbidden    Code = "forbidden"
	ENotFound     Code = "not_found"
	EConflict     Code = "conflict"
	ERateLimited  Code = "rate_limited"
	EUnavailable  Code = "unavailable"
	EInternal     Code = "internal"
)

// Error is a domain error whose Message is safe to show to the caller.
type Error struct {
	Code    Code
	Message string
	// RetryAfter, when set, tells a rate-limited caller how long to wait.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EInternal for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the caller-safe message of err. Errors without a code
// never leak their text: they read "internal error".
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// HTTPStatus is the one table from error codes to HTTP statuses, for every
// package that answers over HTTP (the api's JSON errors, the web pages):
// EInternal, and any code not listed, is 500.
func HTTPStatus(code Code) int {
	switch code {
	case EInvalid:
		return http.StatusBadRequest
	case EUnauthorized:
		return http.StatusUnauthorized
	case EForbidden:
		return http.StatusForbidden
	case ENotFound:
		return http.StatusNotFound
	case EConflict:
		return http.StatusConflict
	case ERateLimited:
		return http.StatusTooManyRequests
	case EUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
