package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db/dbtest"
)

func TestREST(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine)
			tok := e.Tokens(t, eraStateless, "acme")
			other := e.Tokens(t, eraStateless, "other")
			alice := e.Connect(t, eraStateless, tok["alice"])
			ok(t, alice, "create_channel", map[string]any{"channel": "dev", "members": []string{"bob"}})
			ok(t, alice, "create_channel", map[string]any{"channel": "ops", "private": true})

			if code, m := e.REST(t, "", "GET", "/api/v1/channels", ""); code != 401 || m["error"] != "unauthorized" {
				t.Fatalf("no token: %d %v", code, m)
			}
			if code, m := e.REST(t, "ctalk_not-a-token", "GET", "/api/v1/channels", ""); code != 401 {
				t.Fatalf("bad token: %d %v", code, m)
			}
			code, m := e.REST(t, tok["bob"], "GET", "/api/v1/channels", "")
			if chs := list(m, "channels"); code != 200 || len(chs) != 1 || field(chs[0], "channel") != "dev" {
				t.Fatalf("list: %d %v", code, m)
			}
			code, m = e.REST(t, tok["bob"], "POST", "/api/v1/channels/dev/messages", `{"text": "from a script", "priority": "high"}`)
			if code != 201 || m["seq"] != 1.0 || m["posted_by_agent"] != true || m["priority"] != "high" || m["from_name"] != "Bob" {
				t.Fatalf("post: %d %v", code, m)
			}
			if code, m = e.REST(t, tok["bob"], "POST", "/api/v1/channels/dev/messages", `{"text": "x", "colour": "red"}`); code != 400 || !strings.Contains(m["message"].(string), "colour") {
				t.Fatalf("unknown field: %d %v", code, m)
			}
			if code, m = e.REST(t, tok["carol"], "POST", "/api/v1/channels/dev/messages", `{"text": "x"}`); code != 403 {
				t.Fatalf("non-member post: %d %v", code, m)
			}
			code, m = e.REST(t, tok["alice"], "GET", "/api/v1/channels/dev/messages?after=0&limit=10", "")
			if msgs := list(m, "messages"); code != 200 || len(msgs) != 1 || field(msgs[0], "text") != "from a script" {
				t.Fatalf("read: %d %v", code, m)
			}
			if code, m = e.REST(t, tok["alice"], "GET", "/api/v1/channels/dev/messages?limit=abc", ""); code != 400 {
				t.Fatalf("bad limit: %d %v", code, m)
			}
			code, m = e.REST(t, tok["alice"], "GET", "/api/v1/wait?channel=dev&after=0&timeout_s=1e300", "")
			if msgs := list(m, "messages"); code != 200 || len(msgs) != 1 || m["timed_out"] != false {
				t.Fatalf("wait: %d %v", code, m)
			}
			code, m = e.REST(t, tok["alice"], "GET", "/api/v1/wait?timeout_s=0", "")
			if code != 200 || m["timed_out"] != true {
				t.Fatalf("wait with nothing unread: %d %v", code, m)
			}

			// Another org's channel, and a private channel bob is not in.
			for _, who := range []string{other["bob"], tok["bob"]} {
				for _, path := range []string{"/api/v1/channels/ops/messages", "/api/v1/channels/ops/events", "/api/v1/wait?channel=ops"} {
					if code, m := e.REST(t, who, "GET", path, ""); code != 404 {
						t.Fatalf("GET %s: %d %v, want 404", path, code, m)
					}
				}
				if code, m := e.REST(t, who, "POST", "/api/v1/channels/ops/messages", `{"text": "hi"}`); code != 404 {
					t.Fatalf("POST to ops: %d %v, want 404", code, m)
				}
			}
			if code, m := e.REST(t, other["bob"], "GET", "/api/v1/channels/dev/messages", ""); code != 404 {
				t.Fatalf("another org's dev: %d %v", code, m)
			}

			code, m = e.REST(t, "", "GET", "/api/v1/openapi.json", "")
			if code != 200 || m["openapi"] != "3.1.0" {
				t.Fatalf("openapi.json: %d", code)
			}
		})
	}
}

// sse is one Server-Sent Events connection.
type sse struct {
	resp *http.Response
	r    *bufio.Reader
}

// streamEvents opens the REST mirror's event stream of channel on e, resuming after lastID.
func streamEvents(t testing.TB, e *env, token, channel, lastID string) *sse {
	t.Helper()
	req, _ := http.NewRequest("GET", e.URL+"/api/v1/channels/"+channel+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	t.Cleanup(func() { resp.Body.Close() })
	return &sse{resp: resp, r: bufio.NewReader(resp.Body)}
}

// next returns the id and data of the next event, skipping comments.
func (s *sse) next(t testing.TB) (id string, data map[string]any) {
	t.Helper()
	var event string
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("event stream ended: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && event != "":
			return id, data
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &data); err != nil {
				t.Fatalf("event data %q: %v", line, err)
			}
		}
	}
}

// TestEventStreamResumes drops an event stream and reconnects with
// Last-Event-ID: the new stream starts right after the last message
// received, missing none and repeating none.
func TestEventStreamResumes(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine)
			tok := e.Tokens(t, eraStateless, "acme")
			alice := e.Connect(t, eraStateless, tok["alice"])
			ok(t, alice, "create_channel", map[string]any{"channel": "dev", "members": []string{"bob"}})
			ok(t, alice, "post_message", map[string]any{"channel": "dev", "text": "before the stream"})

			s := streamEvents(t, e, tok["bob"], "dev", "")
			post := func(text string) {
				ok(t, alice, "post_message", map[string]any{"channel": "dev", "text": text})
			}
			post("m2")
			post("m3")
			for _, want := range []string{"2", "3"} {
				if id, data := s.next(t); id != want || data["seq"] != mustNumber(want) || data["text"] != "m"+want {
					t.Fatalf("event %s: %v, want seq %s", id, data, want)
				}
			}
			s.resp.Body.Close()
			post("m4")
			post("m5")
			s = streamEvents(t, e, tok["bob"], "dev", "3")
			for _, want := range []string{"4", "5"} {
				if id, data := s.next(t); id != want || data["text"] != "m"+want {
					t.Fatalf("after resuming from 3: event %s %v, want %s", id, data, want)
				}
			}
		})
	}
}

func mustNumber(s string) float64 {
	var f float64
	fmt.Sscan(s, &f)
	return f
}

// TestEventStreamEndsOnDrain shows that a server shutting down ends its
// event streams, so that they do not hold the shutdown up; clients
// reconnect with Last-Event-ID.
func TestEventStreamEndsOnDrain(t *testing.T) {
	t.Parallel()
	e := start(t, dbtest.Engines[0])
	tok := e.Tokens(t, eraStateless, "acme")
	ok(t, e.Connect(t, eraStateless, tok["alice"]), "create_channel", map[string]any{"channel": "dev"})
	s := streamEvents(t, e, tok["alice"], "dev", "")
	e.App.Drain()
	if _, err := io.ReadAll(s.r); err != nil {
		t.Fatalf("the stream ended with %v, want its end", err)
	}
}
