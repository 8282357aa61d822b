package notify_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
)

func httptestRequest(method, path, body string) *http.Request {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return r
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }
