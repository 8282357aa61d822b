package oauth

import (
	"fmt"
	"net/http"
)

// Error is an OAuth protocol error (RFC 6749 section 5.2, RFC 7591 section
// 3.2.2): its Code is one of the standard error names, its Description says
// in words what to change.
type Error struct {
	Code        string
	Description string
	// Status is the HTTP status of the error response.
	Status int
	// Unreachable marks a client metadata document this server could not
	// fetch (no route out, a refused connection, an error status): the
	// sign-in page then says how to register a client instead.
	Unreachable bool
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

func oauthErr(status int, code, format string, args ...any) *Error {
	return &Error{Code: code, Description: fmt.Sprintf(format, args...), Status: status}
}

func invalidRequest(format string, args ...any) *Error {
	return oauthErr(http.StatusBadRequest, "invalid_request", format, args...)
}

func invalidGrant(format string, args ...any) *Error {
	return oauthErr(http.StatusBadRequest, "invalid_grant", format, args...)
}

func invalidClientMetadata(format string, args ...any) *Error {
	return oauthErr(http.StatusBadRequest, "invalid_client_metadata", format, args...)
}

func invalidRedirect(format string, args ...any) *Error {
	return oauthErr(http.StatusBadRequest, "invalid_redirect_uri", format, args...)
}
