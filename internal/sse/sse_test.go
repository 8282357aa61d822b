package sse_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/internal/sse"
)

// TestStreamFormat: the headers, an event with and without an id, the
// keep-alive comment, the retry hint and an error, byte for byte.
func TestStreamFormat(t *testing.T) {
	w := httptest.NewRecorder()
	w.Header().Set("Cache-Control", "no-store")
	if err := sse.Start(w); err != nil {
		t.Fatal(err)
	}
	sse.Retry(w, 2*time.Second)
	sse.Send(w, sse.Event{ID: "7", Name: "message", Data: map[string]int{"seq": 7}})
	sse.Send(w, sse.Event{Name: "counts", Data: []int{1}})
	sse.Ping(w)
	sse.Fail(w, ctalk.Errorf(ctalk.EUnauthorized, "sign in again"))
	for name, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"} {
		if got := w.Header().Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	want := "retry: 2000\n\n" +
		"id: 7\nevent: message\ndata: {\"seq\":7}\n\n" +
		"event: counts\ndata: [1]\n\n" +
		": keep-alive\n\n" +
		"event: error\ndata: {\"error\":\"unauthorized\",\"message\":\"sign in again\"}\n\n"
	if got := w.Body.String(); got != want {
		t.Fatalf("stream:\n%q\nwant\n%q", got, want)
	}
	if !w.Flushed {
		t.Fatal("nothing was flushed")
	}
	plain := httptest.NewRecorder()
	sse.Start(plain)
	if got := plain.Header().Get("Cache-Control"); got != "no-cache" {
		t.Fatalf("Cache-Control without one set = %q, want no-cache", got)
	}
}
