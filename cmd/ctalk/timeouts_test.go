package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// stalledRequest sends the start of a request to the program and stops,
// then reads what the server does about it. It fails the test when the
// connection is still held after hold: the server kept it for a client that
// sends nothing more.
func stalledRequest(t *testing.T, p *program, start string, hold time.Duration) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, start); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(hold))
	got, err := io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the connection of a stalled request is still held after %s; got so far %q", hold, got)
	}
	return string(got)
}

// TestStalledRequestsAreCut stalls a request in its headers and another in
// its body, on a real port: READ_TIMEOUT cuts both, far before the client's
// patience runs out.
func TestStalledRequestsAreCut(t *testing.T) {
	t.Parallel()
	env := testEnviron(t)
	env["READ_TIMEOUT"] = "300ms"
	p := serveProgram(t, env)

	t.Run("headers", func(t *testing.T) {
		stalledRequest(t, p, "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: app", 10*time.Second)
	})
	t.Run("body", func(t *testing.T) {
		got := stalledRequest(t, p, "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"jsonrpc\":", 10*time.Second)
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
		if err != nil {
			t.Fatalf("no response to a stalled body: %v (%q)", err, got)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "did not arrive within 300ms") {
			t.Errorf("stalled body: %d %s, want 408 saying the body did not arrive", resp.StatusCode, b)
		}
	})
	t.Run("a body sent at once is answered", func(t *testing.T) {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		// Opted in to anonymous set-up: without a credential, initialize
		// is otherwise answered 401.
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/mcp?setup=1", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("initialize: %d", resp.StatusCode)
		}
	})
}
