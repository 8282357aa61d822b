package tools_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db/dbtest"
)

// Bad input of every kind, over real HTTP: each gets a clear, specific error,
// never a 5xx, never a panic, and never an echo of a huge input.

const big = 100 << 10 // 100 KB

// maxErrorLen bounds an error message, so that a huge input is not echoed.
const maxErrorLen = 1000

// failShort is fail, and also requires the message to be short.
func failShort(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, want string) {
	t.Helper()
	if got := fail(t, cs, tool, args, want); len(got) > maxErrorLen {
		t.Errorf("%s: the error is %d bytes long; it echoes the input", tool, len(got))
	}
}

func TestWrongArgumentTypes(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		a := e.Org(t, era, "a")
		anon := e.Connect(t, era, "")
		user := map[string]any{"org_id": "a", "admin_password": adminPW, "user_id": "z", "name": "Z", "password": userPW, "ownership": "x"}
		with := func(k string, v any) map[string]any {
			m := map[string]any{}
			for k, v := range user {
				m[k] = v
			}
			m[k] = v
			return m
		}
		for _, c := range []struct {
			cs   *mcp.ClientSession
			tool string
			args map[string]any
			want string
		}{
			{anon, "login", map[string]any{"org_id": 5, "user_id": "bob", "password": userPW}, `argument "org_id" must be a string, not a number`},
			{anon, "login", map[string]any{"org_id": "a", "user_id": "bob", "password": 12345678}, `argument "password" must be a string, not a number`},
			{anon, "login", map[string]any{"org_id": "a", "user_id": []string{"bob"}, "password": userPW}, `argument "user_id" must be a string, not an array`},
			{anon, "register_organization", map[string]any{"org_id": "x", "name": map[string]any{"en": "X"}, "admin_password": adminPW}, `argument "name" must be a string, not an object`},
			{anon, "register_user", with("ownership", map[string]any{"repo": "x"}), `argument "ownership" must be a list of strings, or one comma-separated string`},
			{anon, "register_user", with("ownership", []any{1, 2}), `argument "ownership" must be a list of strings`},
			{anon, "register_user", with("ownership", true), `argument "ownership" must be a list of strings`},
			{anon, "register_user", with("role", 1), `argument "role" must be a string, not a number`},
			{a["bob"], "update_my_notes", map[string]any{"notes": true}, `argument "notes" must be a string, not a bool`},
			{a["bob"], "get_user_profile", map[string]any{"user_id": 7}, `argument "user_id" must be a string, not a number`},
			{a["bob"], "whoami", map[string]any{"auth_token": 1}, `argument "auth_token" must be a string, not a number`},
			{a["alice"], "update_user_profile_notes", map[string]any{"org_id": "a", "user_id": "bob", "profile_notes": []string{"x"}}, `argument "profile_notes" must be a string, not an array`},
		} {
			failShort(t, c.cs, c.tool, c.args, c.want)
		}
		// An ownership list of strings and one comma-separated string both work.
		ok(t, anon, "register_user", with("ownership", []string{"alpha", "beta"}))
		u := ok(t, anon, "register_user", with("user_id", "y"))
		if mustJSON(u["ownership"]) != `["x"]` {
			t.Errorf("ownership = %v", u["ownership"])
		}
		checkLogs(t, e.Logs.String())
	})
}

// requiredArgs lists a tool's required arguments from its input schema.
func requiredArgs(t *testing.T, tool *mcp.Tool) []string {
	t.Helper()
	b, _ := json.Marshal(tool.InputSchema)
	var schema struct{ Required []string }
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatalf("%s: input schema %s: %v", tool.Name, b, err)
	}
	return schema.Required
}

func TestMissingRequiredArguments(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		a := e.Org(t, era, "a")
		list, err := a["alice"].ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, tool := range list.Tools {
			req := requiredArgs(t, tool)
			if len(req) == 0 {
				continue
			}
			checked++
			failShort(t, a["alice"], tool.Name, nil, fmt.Sprintf("argument %q is required", req[0]))
			failShort(t, a["alice"], tool.Name, map[string]any{req[0]: nil}, fmt.Sprintf("argument %q is required", req[0]))
		}
		if checked < 5 {
			t.Fatalf("only %d tools have required arguments", checked)
		}

		// Omitting the notes does not erase them.
		ok(t, a["bob"], "update_my_notes", map[string]any{"notes": "I own the retry logic"})
		failShort(t, a["bob"], "update_my_notes", map[string]any{}, `argument "notes" is required`)
		ok(t, a["alice"], "update_user_profile_notes", map[string]any{"org_id": "a", "user_id": "bob", "profile_notes": "on call"})
		failShort(t, a["alice"], "update_user_profile_notes", map[string]any{"org_id": "a", "user_id": "bob"}, `argument "profile_notes" is required`)
		u := ok(t, a["carol"], "get_user_profile", map[string]any{"user_id": "bob"})["user"].(map[string]any)
		if u["notes"] != "I own the retry logic" || u["profile_notes"] != "on call" {
			t.Errorf("after calls without the text, bob = %v", u)
		}
		// An optional argument may be left out.
		ok(t, a["alice"], "register_user", map[string]any{"org_id": "a", "user_id": "dan", "name": "Dan", "password": userPW, "ownership": []string{}})
		checkLogs(t, e.Logs.String())
	})
}

func TestHugeStrings(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		a := e.Org(t, era, "a")
		anon := e.Connect(t, era, "")
		huge := strings.Repeat("x", big)
		hugeID := strings.Repeat("a", big)
		user := func(k, v string) map[string]any {
			m := map[string]any{"org_id": "a", "admin_password": adminPW, "user_id": "z", "name": "Z", "password": userPW, "ownership": "x"}
			m[k] = v
			return m
		}
		for _, c := range []struct {
			cs   *mcp.ClientSession
			tool string
			args map[string]any
			want string
		}{
			{anon, "register_organization", map[string]any{"org_id": hugeID, "name": "X", "admin_password": adminPW}, "org_id is 102400 characters long; use 1 to 64"},
			{anon, "register_organization", map[string]any{"org_id": "x", "name": huge, "admin_password": adminPW}, "name is 102400 characters; at most 200"},
			{anon, "register_organization", map[string]any{"org_id": "x", "name": "X", "admin_password": huge}, "admin_password is 102400 bytes; at most 72 bytes"},
			{anon, "register_user", user("org_id", hugeID), "org_id is 102400 characters long"},
			{anon, "register_user", user("user_id", hugeID), "user_id is 102400 characters long"},
			{anon, "register_user", user("user_id", huge+" "+huge), "user_id is 204801 characters long"},
			{anon, "register_user", user("name", huge), "name is 102400 characters; at most 200"},
			{anon, "register_user", user("password", huge), "password is 102400 bytes; at most 72 bytes"},
			{anon, "register_user", user("notes", huge), "notes is 102400 characters; at most 10000"},
			{anon, "register_user", user("ownership", huge), "each ownership entry may be at most 200 characters"},
			{anon, "register_user", user("ownership", strings.Repeat("x,", big/2)), "ownership has 51200 entries; at most 50"},
			{anon, "register_user", user("admin_password", huge), "wrong"},
			{anon, "register_user", user("role", huge), `is not valid; use "member" or "admin"`},
			{anon, "login", map[string]any{"org_id": hugeID, "user_id": "bob", "password": userPW}, "org_id is 102400 characters long"},
			{anon, "login", map[string]any{"org_id": "a", "user_id": hugeID, "password": userPW}, "user_id is 102400 characters long"},
			{anon, "login", map[string]any{"org_id": "a", "user_id": "bob", "password": huge}, "login failed"},
			{anon, "whoami", map[string]any{"auth_token": huge}, "not a ctalk token"},
			{a["bob"], "update_my_notes", map[string]any{"notes": huge}, "notes is 102400 characters; at most 10000"},
			{a["bob"], "get_user_profile", map[string]any{"user_id": hugeID}, "user_id is 102400 characters long"},
			{a["alice"], "update_user_profile_notes", map[string]any{"org_id": "a", "user_id": "bob", "profile_notes": huge}, "profile_notes is 102400 characters; at most 10000"},
			{a["alice"], "update_user_profile_notes", map[string]any{"org_id": hugeID, "user_id": "bob", "profile_notes": "x"}, "org_id is 102400 characters long"},
		} {
			failShort(t, c.cs, c.tool, c.args, c.want)
		}
		if n := countRows(t, e.DB, `SELECT COUNT(*) FROM users WHERE id = 'z'`); n != 0 {
			t.Error("a refused user was stored")
		}
		// The huge password was one failure, no more, and bob's password
		// still works.
		if n := countRows(t, e.DB, `SELECT COUNT(*) FROM login_failures WHERE org_id = 'a' AND user_id = 'bob'`); n != 1 {
			t.Errorf("bob has %d login failures, want 1 for the huge password", n)
		}
		e.Login(t, anon, "a", "bob")
		checkLogs(t, e.Logs.String())
	})
}

func TestUnknownArgumentsAndTools(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		a := e.Org(t, era, "a")
		anon := e.Connect(t, era, "")
		failShort(t, anon, "login", map[string]any{"org_id": "a", "user_id": "bob", "password": userPW, "remember_me": true}, `unknown argument "remember_me"`)
		failShort(t, a["bob"], "whoami", map[string]any{"verbose": 1}, `unknown argument "verbose"`)
		failShort(t, a["bob"], "update_my_notes", map[string]any{"notes": "x", "user_id": "alice"}, `unknown argument "user_id"`)
		failShort(t, anon, "register_organization", map[string]any{"org_id": "x", "name": "X", "admin_password": adminPW, "approval_mode": "none"}, `unknown argument "approval_mode"`)
		// mcp-go answers an unknown tool with a JSON-RPC error naming it (in
		// full: it echoes a huge name). In the stateless era, a name that does
		// not match its Mcp-Name header ("" sends none, "login " sends "login")
		// is refused before that, with a 400.
		for _, name := range []string{"nope", "", "login ", strings.Repeat("t", big)} {
			want, not := "tool '"+name+"' not found", "header mismatch"
			if era == eraStateless && (name == "" || strings.TrimSpace(name) != name) {
				want, not = "header mismatch: Mcp-Name", "not found"
			}
			_, err := anon.CallTool(t.Context(), &mcp.CallToolParams{Name: name})
			if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), not) {
				t.Errorf("tool %.20q: %.300v; want an error with %.40q and without %q", name, err, want, not)
			}
			if bad := strings.Contains(fmt.Sprint(err), "Bad Request"); bad != (era == eraStateless) {
				t.Errorf("tool %.20q: %.300v; a 400 in era %s is %v, want %v", name, err, era, bad, !bad)
			}
		}
		checkLogs(t, e.Logs.String())
	})
}

// rawSession opens a 2025-11-25 session by hand and returns its id.
func rawSession(t *testing.T, e *env) string {
	t.Helper()
	status, h, body := rawPost(t, e.URL, strings.NewReader(initializeBody), nil)
	sid := h.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s (session %q)", status, body, sid)
	}
	status, _, body = rawPost(t, e.URL, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), sessionHeaders(sid))
	if status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", status, body)
	}
	return sid
}

func sessionHeaders(sid string) map[string]string {
	return map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": eraSessions}
}

// rpcReply is a JSON-RPC response, from a JSON body or the first SSE event.
type rpcReply struct {
	ID     any
	Result *struct {
		IsError bool
		Content []struct{ Text string }
	}
	Error *struct {
		Code    int
		Message string
	}
}

func parseReply(t *testing.T, body string) rpcReply {
	t.Helper()
	data := body
	if !strings.HasPrefix(strings.TrimSpace(body), "{") {
		sc := bufio.NewScanner(strings.NewReader(body))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, found := strings.CutPrefix(sc.Text(), "data:"); found {
				data = d
				break
			}
		}
	}
	var r rpcReply
	if err := json.Unmarshal([]byte(data), &r); err != nil {
		t.Fatalf("reply %q is not JSON-RPC: %v", body, err)
	}
	return r
}

func TestMalformedJSONRPC(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine)
			for _, c := range []struct {
				name, body string
				status     int
				code       int
				want       string
			}{
				{"invalid JSON", `{"jsonrpc":"2.0","id":1,"method":`, 400, -32700, "not valid json"},
				{"not JSON at all", `hello`, 400, -32700, "not valid json"},
				{"empty body", ``, 400, -32700, "not valid json"},
				{"missing method", `{"jsonrpc":"2.0","id":1}`, 400, -32600, `no "method"`},
				{"missing method with params", `{"jsonrpc":"2.0","id":1,"params":{"name":"whoami"}}`, 400, -32600, `no "method"`},
				{"method not a string", `{"jsonrpc":"2.0","id":1,"method":7}`, 400, -32600, `"method" must be a string`},
				{"wrong jsonrpc version", `{"jsonrpc":"1.0","id":1,"method":"initialize","params":{}}`, 400, -32600, `"jsonrpc": "2.0"`},
				{"missing jsonrpc version", `{"id":1,"method":"tools/list"}`, 400, -32600, `"jsonrpc": "2.0"`},
				{"jsonrpc version a number", `{"jsonrpc":2.0,"id":1,"method":"tools/list"}`, 400, -32600, `"jsonrpc": "2.0"`},
				{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, 400, -32600, "batches are not supported"},
				{"null", `null`, 400, -32600, "a JSON object"},
				{"string", `"tools/list"`, 400, -32600, "a JSON object"},
			} {
				t.Run(c.name, func(t *testing.T) {
					status, _, body := rawPost(t, e.URL, strings.NewReader(c.body), nil)
					if status != c.status {
						t.Fatalf("status %d (%s), want %d", status, body, c.status)
					}
					r := parseReply(t, body)
					if r.Error == nil || r.Error.Code != c.code || !strings.Contains(r.Error.Message, c.want) {
						t.Errorf("reply %s; want error %d containing %q", body, c.code, c.want)
					}
				})
			}
			t.Run("responses answer nothing", func(t *testing.T) {
				// ctalk sends clients no requests: a response is accepted and
				// dropped, without an error in the log.
				sid := rawSession(t, e)
				for _, body := range []string{
					`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`,
					`{"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"no such method"}}`,
					`{"jsonrpc":"2.0","id":9,"result":{}}`,
				} {
					if status, _, reply := rawPost(t, e.URL, strings.NewReader(body), sessionHeaders(sid)); status != http.StatusAccepted || reply != "" {
						t.Errorf("%s: status %d %q, want 202 and no body", body, status, reply)
					}
				}
				checkLogs(t, e.Logs.String())
			})
			t.Run("wrong content type", func(t *testing.T) {
				status, _, body := rawPost(t, e.URL, strings.NewReader(initializeBody), map[string]string{"Content-Type": "text/plain"})
				if status != http.StatusBadRequest || !strings.Contains(body, "application/json") {
					t.Errorf("status %d %s; want 400 naming application/json", status, body)
				}
			})

			// Inside a session: calls that mcp-go decodes, then ctalk refuses.
			sid := rawSession(t, e)
			for _, c := range []struct {
				name, body string
				want       string
				toolError  bool
			}{
				{"unknown tool", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, "not found", false},
				{"unknown method", `{"jsonrpc":"2.0","id":2,"method":"tools/frobnicate","params":{}}`, "not found", false},
				{"arguments a string", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"login","arguments":"org_id=a"}}`, "the arguments must be a JSON object, not a string", true},
				{"arguments an array", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"login","arguments":["a","bob"]}}`, "the arguments must be a JSON object, not an array", true},
				{"no arguments", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"login"}}`, `argument "org_id" is required`, true},
				{"wrong type", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"login","arguments":{"org_id":{},"user_id":"b","password":"c"}}}`, `argument "org_id" must be a string, not an object`, true},
			} {
				t.Run(c.name, func(t *testing.T) {
					status, _, body := rawPost(t, e.URL, strings.NewReader(c.body), sessionHeaders(sid))
					if status >= 500 {
						t.Fatalf("status %d %s", status, body)
					}
					r := parseReply(t, body)
					var got string
					switch {
					case c.toolError && r.Result != nil && r.Result.IsError && len(r.Result.Content) > 0:
						got = r.Result.Content[0].Text
					case !c.toolError && r.Error != nil:
						got = r.Error.Message
					default:
						t.Fatalf("reply %s; want a %s", body, map[bool]string{true: "tool error", false: "JSON-RPC error"}[c.toolError])
					}
					if !strings.Contains(got, c.want) {
						t.Errorf("error %q does not contain %q", got, c.want)
					}
				})
			}
			checkLogs(t, e.Logs.String())
		})
	}
}

// paddedInitialize returns an initialize request of exactly n bytes.
func paddedInitialize(t *testing.T, n int) string {
	t.Helper()
	const head = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`
	const tail = `","version":"1"}}}`
	pad := n - len(head) - len(tail)
	if pad < 0 {
		t.Fatal("n is too small")
	}
	return head + strings.Repeat("p", pad) + tail
}

// unsized hides a reader's length, so the request is sent chunked.
type unsized struct{ io.Reader }

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine)
			for _, c := range []struct {
				name    string
				size    int
				chunked bool
				status  int
			}{
				{"exactly 1 MiB", 1 << 20, false, http.StatusOK},
				{"exactly 1 MiB, chunked", 1 << 20, true, http.StatusOK},
				{"1 MiB and a byte", 1<<20 + 1, false, http.StatusRequestEntityTooLarge},
				{"1 MiB and a byte, chunked", 1<<20 + 1, true, http.StatusRequestEntityTooLarge},
				{"5 MiB", 5 << 20, false, http.StatusRequestEntityTooLarge},
				{"5 MiB, chunked", 5 << 20, true, http.StatusRequestEntityTooLarge},
			} {
				t.Run(c.name, func(t *testing.T) {
					var body io.Reader = strings.NewReader(paddedInitialize(t, c.size))
					if c.chunked {
						body = unsized{body}
					}
					status, _, got := rawPost(t, e.URL, body, nil)
					if status != c.status {
						t.Fatalf("status %d (%.200s), want %d", status, got, c.status)
					}
					if status == http.StatusRequestEntityTooLarge {
						var msg struct{ Error, Message string }
						if err := json.Unmarshal([]byte(got), &msg); err != nil || !strings.Contains(msg.Message, "1 MiB") {
							t.Errorf("413 body %s does not say what the limit is", got)
						}
					}
				})
			}
			// A huge bearer header is refused as a bad token, not a crash.
			wantChallenge(t, e, "Bearer "+strings.Repeat("z", big), "not a ctalk token")
			checkLogs(t, e.Logs.String())
		})
	}
}

func TestIDRules(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		anon := e.Connect(t, era, "")
		for _, c := range []struct{ in, want string }{
			{"  Acme ", "acme"},
			{"MiXeD-Case_09", "mixed-case_09"},
			{"\tteam-1\n", "team-1"},
			{strings.Repeat("z", 64), strings.Repeat("z", 64)},
			{"_", "_"},
		} {
			org := ok(t, anon, "register_organization", map[string]any{"org_id": c.in, "name": "N", "admin_password": adminPW})
			if org["org_id"] != c.want {
				t.Errorf("org_id %q became %q, want %q", c.in, org["org_id"], c.want)
			}
		}
		// The normalized id is the same org.
		fail(t, anon, "register_organization", map[string]any{"org_id": "ACME", "name": "N", "admin_password": adminPW}, `"acme" is taken`)

		const rule = "use only a-z, 0-9, '-' or '_' (1 to 64 characters)"
		for _, c := range []struct{ in, want string }{
			{"", "org_id is required: use 1 to 64 characters of a-z, 0-9, '-' or '_'"},
			{"   ", "org_id is required"},
			{strings.Repeat("z", 65), "org_id is 65 characters long; use 1 to 64 characters of a-z, 0-9, '-' or '_'"},
			{"my org", rule},
			{"a.b", rule},
			{"a/b", rule},
			{"../etc", rule},
			{"café", rule},
			{"ACME Ltd.", rule},
			{"<script>", rule},
			{"x'; DROP TABLE orgs;--", rule},
			{"a\x00b", rule},
			{"emoji😀", rule},
		} {
			got := fail(t, anon, "register_organization", map[string]any{"org_id": c.in, "name": "N", "admin_password": adminPW}, c.want)
			if !strings.HasPrefix(got, "invalid: ") {
				t.Errorf("org_id %q: %q is not an invalid-input error", c.in, got)
			}
		}
		// User ids follow the same rule wherever they are taken.
		ok(t, anon, "register_user", map[string]any{"org_id": " ACME", "admin_password": adminPW, "user_id": " Bob ", "name": "Bob", "password": userPW, "ownership": "x"})
		tok := ok(t, anon, "login", map[string]any{"org_id": "Acme", "user_id": "BOB", "password": userPW})["auth_token"].(string)
		bob := e.Connect(t, era, tok)
		if u := ok(t, bob, "get_user_profile", map[string]any{"user_id": "  bOb "})["user"].(map[string]any); u["user_id"] != "bob" {
			t.Errorf("get_user_profile of \"  bOb \" = %v", u)
		}
		fail(t, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": "bob smith", "name": "B", "password": userPW, "ownership": "x"}, "user_id has the character ' '; "+rule)
		fail(t, anon, "login", map[string]any{"org_id": "acme", "user_id": "bob/..", "password": userPW}, rule)
		fail(t, bob, "get_user_profile", map[string]any{"user_id": "bob@acme"}, rule)
		checkLogs(t, e.Logs.String())
	})
}

// TestNULCharacters sends NUL, which Postgres cannot store in text, in every
// account argument: each is refused as invalid or handled, never an internal
// error.
func TestNULCharacters(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		a := e.Org(t, era, "a")
		anon := e.Connect(t, era, "")
		user := func(k string, v any) map[string]any {
			m := map[string]any{"org_id": "a", "admin_password": adminPW, "user_id": "z", "name": "Z", "password": userPW, "ownership": "x"}
			m[k] = v
			return m
		}
		for _, c := range []struct {
			cs   *mcp.ClientSession
			tool string
			args map[string]any
			want string
		}{
			{anon, "register_organization", map[string]any{"org_id": "x\x00", "name": "X", "admin_password": adminPW}, "has the character"},
			{anon, "register_organization", map[string]any{"org_id": "x", "name": "X\x00", "admin_password": adminPW}, "NUL"},
			{anon, "register_user", user("user_id", "z\x00"), "has the character"},
			{anon, "register_user", user("name", "Z\x00Z"), "NUL"},
			{anon, "register_user", user("notes", "\x00"), "NUL"},
			{anon, "register_user", user("role", "admin\x00"), "is not valid"},
			{anon, "register_user", user("admin_password", adminPW+"\x00"), "wrong"},
			{anon, "login", map[string]any{"org_id": "a", "user_id": "bob\x00", "password": userPW}, "has the character"},
			{anon, "login", map[string]any{"org_id": "a", "user_id": "bob", "password": userPW + "\x00"}, "login failed"},
			{anon, "whoami", map[string]any{"auth_token": "ctalk_\x00"}, "unknown or expired"},
			{a["bob"], "update_my_notes", map[string]any{"notes": "a\x00b"}, "NUL"},
			{a["bob"], "get_user_profile", map[string]any{"user_id": "\x00"}, "has the character"},
			{a["alice"], "update_user_profile_notes", map[string]any{"org_id": "a", "user_id": "bob", "profile_notes": "\x00"}, "NUL"},
		} {
			failShort(t, c.cs, c.tool, c.args, c.want)
		}
		// Ownership is stored as JSON and passwords only as bcrypt hashes, so
		// a NUL in them is harmless.
		ok(t, anon, "register_user", user("ownership", []string{"a\x00b"}))
		ok(t, anon, "register_user", map[string]any{"org_id": "a", "admin_password": adminPW, "user_id": "nul", "name": "N", "password": "pass\x00word", "ownership": "x"})
		ok(t, anon, "login", map[string]any{"org_id": "a", "user_id": "nul", "password": "pass\x00word"})
		fail(t, anon, "login", map[string]any{"org_id": "a", "user_id": "nul", "password": "pass"}, "login failed")
		checkLogs(t, e.Logs.String())
	})
}
