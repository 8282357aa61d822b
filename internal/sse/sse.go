// Package sse writes Server-Sent Events streams, the same way for every
// stream ctalk serves (a channel's messages, a person's live counts): the
// headers that keep proxies from buffering, events, the keep-alive comment,
// and an error as the stream's last event.
package sse

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/ctalk/ctalk"
)

// KeepAlive is how long a stream stays silent before it sends a comment,
// which also lets proxies see that the stream is alive.
const KeepAlive = 25 * time.Second

// Start sends the headers of an event stream and flushes them, so that the
// client sees the stream open at once. A Cache-Control already set (such as
// no-store) is kept.
func Start(w http.ResponseWriter) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-cache")
	}
	// nginx would otherwise buffer the stream.
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return http.NewResponseController(w).Flush()
}

// Event is one event of a stream; Data is sent as JSON.
type Event struct {
	ID   string
	Name string
	Data any
}

// Write writes an event without flushing it, so that several go out
// together; Flush sends them.
func Write(w http.ResponseWriter, e Event) error {
	b, err := json.Marshal(e.Data)
	if err != nil {
		return fmt.Errorf("encode event %s: %w", e.Name, err)
	}
	if e.ID != "" {
		if _, err := fmt.Fprintf(w, "id: %s\n", e.ID); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.Name, b)
	return err
}

// Send writes an event and flushes it.
func Send(w http.ResponseWriter, e Event) error {
	if err := Write(w, e); err != nil {
		return err
	}
	return Flush(w)
}

// Ping sends the keep-alive comment.
func Ping(w http.ResponseWriter) error {
	if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
		return err
	}
	return Flush(w)
}

// Flush sends what was written.
func Flush(w http.ResponseWriter) error { return http.NewResponseController(w).Flush() }

// Fail ends a stream whose headers are sent with the error as its last
// event, "error", carrying the error's kind and message.
func Fail(w http.ResponseWriter, err error) error {
	return Send(w, Event{Name: "error", Data: map[string]string{"error": string(ctalk.ErrorCode(err)), "message": ctalk.ErrorMessage(err)}})
}

// Retry tells the client how long to wait before it reconnects once the
// stream ends.
func Retry(w http.ResponseWriter, d time.Duration) error {
	if _, err := fmt.Fprintf(w, "retry: %d\n\n", d.Milliseconds()); err != nil {
		return err
	}
	return Flush(w)
}
