package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/syncbuf"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
)

// fuzzApp is one ctalk application over a fresh database, with an org of
// two people who have asked each other questions, and a live token for one
// of them.
type fuzzApp struct {
	engine db.Engine
	// era, when set, is the one protocol era check posts in; empty, both.
	era   string
	app   *api.Server
	auth  *auth.Service
	logs  *syncbuf.Buffer
	token string
	// sessions holds the Mcp-Session-Id of the 2025-11-25 era, without and
	// with the token.
	sessions map[bool]string
}

func newFuzzApp(f testing.TB, engine db.Engine) *fuzzApp {
	f.Helper()
	ctx := dbtest.Operator()
	d := dbtest.Open(f, engine)
	acfg := auth.DefaultConfig()
	acfg.BcryptCost = 4
	// Fuzzed logins fail often; the harness must still be able to log in.
	acfg.MaxFailures = 1 << 30
	logs := &syncbuf.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	assembly, err := app.Assemble(d, app.Wiring{API: api.Config{Version: "fuzz", Logger: logger, AllowOrgSignup: true}, Auth: acfg, Inbox: inbox.DefaultConfig()})
	if err != nil {
		f.Fatal(err)
	}
	o := assembly.Orgs
	// Waits return at once once draining, so a fuzzed wait_for_inbox or
	// wait_for_reply costs no time.
	assembly.Drain()
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(dbtest.Operator(), 5*time.Second)
		defer cancel()
		assembly.Close(ctx)
	})

	if _, err := o.Register(ctx, orgs.NewOrg{ID: "acme", Name: "Acme", AdminPassword: "acme-admin-password"}); err != nil {
		f.Fatal(err)
	}
	for _, u := range []orgs.NewUser{
		{ID: "ann", Name: "Ann", Password: "ann-password", Role: orgs.RoleAdmin, Ownership: []string{"billing"}},
		{ID: "bob", Name: "Bob", Password: "bob-password", Ownership: []string{"infra"}},
	} {
		if _, err := o.AddUser(ctx, "acme", u); err != nil {
			f.Fatal(err)
		}
	}
	for _, q := range []struct{ from, to, text string }{
		{"bob", "ann", "Who pays the cloud bill?"},
		{"ann", "bob", "Is the build green?"},
		{"bob", "ann", "When is the next invoice run?"},
	} {
		if _, err := assembly.Inbox.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: q.from}, inbox.Ask{To: q.to, Text: q.text}); err != nil {
			f.Fatal(err)
		}
	}

	fa := &fuzzApp{engine: engine, app: assembly.Server, auth: assembly.Auth, logs: logs}
	fa.login(f)
	fa.sessions = map[bool]string{false: fa.initialize(f, ""), true: fa.initialize(f, fa.token)}
	logs.Take()
	return fa
}

// login gets a fresh token for ann, as after a fuzzed logout.
func (fa *fuzzApp) login(tb testing.TB) {
	tb.Helper()
	token, _, err := fa.auth.Login(dbtest.Operator(), "acme", "ann", "ann-password", "fuzz-harness")
	if err != nil {
		tb.Fatalf("log in the harness user: %v", err)
	}
	fa.token = token
}

// initialize opens a 2025-11-25 session and returns its id.
func (fa *fuzzApp) initialize(tb testing.TB, token string) string {
	tb.Helper()
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + testkit.EraSessions + `","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`
	rec := fa.post(body, testkit.EraSessions, token, "")
	id := rec.Header().Get(mcp.HeaderSessionID)
	if rec.Code != http.StatusOK || id == "" {
		tb.Fatalf("initialize: status %d, session %q, body %s", rec.Code, id, rec.Body)
	}
	if rec := fa.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, testkit.EraSessions, token, id); rec.Code >= 300 {
		tb.Fatalf("notifications/initialized: status %d, body %s", rec.Code, rec.Body)
	}
	return id
}

// post sends body to /mcp as a client of the given era would, and returns
// the recorded answer.
func (fa *fuzzApp) post(body, era, token, session string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, era)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	} else {
		// Opted in to anonymous set-up, so that an anonymous body reaches
		// mcp-go rather than the sign-in challenge.
		req.Header.Set(ctalk.SetupHeader, "1")
	}
	if session != "" {
		req.Header.Set(mcp.HeaderSessionID, session)
	}
	if era == testkit.EraStateless {
		method, name := fuzzRouting(body)
		if method != "" {
			req.Header.Set(mcp.HeaderMethod, method)
		}
		if name != "" {
			req.Header.Set(mcp.HeaderName, name)
		}
	}
	rec := httptest.NewRecorder()
	fa.app.Handler().ServeHTTP(rec, req)
	return rec
}

// fuzzRouting returns what a 2026-07-28 client puts in the Mcp-Method and
// Mcp-Name headers for body.
func fuzzRouting(body string) (method, name string) {
	var m struct {
		Method any `json:"method"`
		Params struct {
			Name any `json:"name"`
			URI  any `json:"uri"`
		} `json:"params"`
	}
	if json.Unmarshal([]byte(body), &m) != nil {
		return "", ""
	}
	method, _ = m.Method.(string)
	if name, _ = m.Params.Name.(string); name == "" {
		name, _ = m.Params.URI.(string)
	}
	return method, name
}

// withStatelessMeta returns body with the protocol version, client info and
// client capabilities in params._meta, as every 2026-07-28 request carries
// them, when body is an object that lacks one of them; otherwise body
// unchanged.
func withStatelessMeta(body string) string {
	var msg map[string]json.RawMessage
	if json.Unmarshal([]byte(body), &msg) != nil || msg == nil {
		return body
	}
	params := map[string]json.RawMessage{}
	if p, ok := msg["params"]; ok && (json.Unmarshal(p, &params) != nil || params == nil) {
		return body
	}
	meta := map[string]json.RawMessage{}
	if m, ok := params["_meta"]; ok && (json.Unmarshal(m, &meta) != nil || meta == nil) {
		return body
	}
	added := false
	for key, v := range map[string]string{
		mcp.MetaKeyProtocolVersion:    `"` + testkit.EraStateless + `"`,
		mcp.MetaKeyClientInfo:         `{"name":"fuzz","version":"1"}`,
		mcp.MetaKeyClientCapabilities: `{}`,
	} {
		if _, ok := meta[key]; !ok {
			meta[key], added = json.RawMessage(v), true
		}
	}
	if !added {
		return body
	}
	params["_meta"], _ = json.Marshal(meta)
	msg["params"], _ = json.Marshal(params)
	b, _ := json.Marshal(msg)
	return string(b)
}

// errorLines returns ctalk's own log lines at level ERROR (those with a
// request id): an internal error or a recovered panic, which arbitrary input
// must not cause. mcp-go's own lines are left out: it logs a stray JSON-RPC
// response at ERROR level, and answers it 400.
func errorLines(logs string) []string {
	var bad []string
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Level     string
			RequestID string `json:"request_id"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Level == slog.LevelError.String() && line.RequestID != "" {
			bad = append(bad, sc.Text())
		}
	}
	return bad
}

// fuzzTool is one registered tool: its name, arguments and required
// arguments.
type fuzzTool struct {
	name     string
	args     []string
	required []string
}

// registeredTools returns every tool s serves.
func registeredTools(s *api.Server) []fuzzTool {
	var tools []fuzzTool
	for name, st := range s.ListTools() {
		var args []string
		for arg := range st.Tool.InputSchema.Properties {
			args = append(args, arg)
		}
		sort.Strings(args)
		tools = append(tools, fuzzTool{name: name, args: args, required: st.Tool.InputSchema.Required})
	}
	return tools
}

// fuzzBodies returns the known bodies: the envelopes of fuzzEnvelopes,
// and every tool with good and odd arguments, and with a NUL in each
// argument in turn (about 960 bodies; TestMCPRequestBodies posts them all).
func fuzzBodies(tools []fuzzTool) []string {
	return append(fuzzEnvelopes(), toolBodies(tools)...)
}

// fuzzEnvelopes returns the handshake, discovery, the other methods, and
// malformed envelopes.
func fuzzEnvelopes() []string {
	return []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":null,"clientInfo":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":[]}`,
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"server/discover"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"bm9wZQ"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"x"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"prompts/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{}}`,
		`{"jsonrpc":"2.0","id":4,"method":"subscriptions/listen","params":{}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tasks/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"no/such/method"}`,
		`{"jsonrpc":"2.0","id":5,"result":{}}`,
		`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":-1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"` + strings.Repeat("9", 5000) + `","method":"ping"}`,
		`{"jsonrpc":"2.0","id":{},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":[],"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":2,"id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":7}`,
		`{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"progressToken":{}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait_for_inbox","arguments":{"timeout_s":120},"_meta":{"progressToken":"p1"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait_for_reply","arguments":{"timeout_s":1e308},"_meta":{"progressToken":1e400}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","task":{"ttl":1000}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
		`[]`, `[1]`, `[[]]`, `{}`, `null`, `1`, `"x"`, `true`, ``, ` `, `{`, `{"jsonrpc":"2.0",`, "\xff\xfe", "\x00",
		strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001),
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat(`}`, 10001) + `}`,
	}
}

// toolCall is the body of a call of tool with the arguments args (JSON).
func toolCall(tool, args string) string {
	return `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

// toolBodies returns every tool's calls with good and odd arguments, and
// with a NUL in each argument in turn.
func toolBodies(tools []fuzzTool) []string {
	var bodies []string
	odd := []string{
		`{}`, `null`, `[]`, `"x"`, `7`,
		`{"org_id":"acme","admin_password":"acme-admin-password","user_id":"bob","name":"B","password":"bob-password","ownership":"a, b"}`,
		`{"org_id":"ACME ","user_id":"Ann","password":"ann-password"}`,
		`{"org_id":1,"user_id":null,"ownership":{},"limit":1e400,"timeout_s":-1}`,
		`{"ownership":[1,null],"notes":"\ud800","cursor":"!!","since":"yesterday"}`,
		`{"to_user_id":"bob","question":"Still green?","idempotency_key":"k"}`,
		`{"message_id":"` + strings.Repeat("m", 300) + `","draft_text":"","final_text":"x","reason":"` + strings.Repeat("r", 3000) + `"}`,
		`{"limit":50,"cursor":"eyJ0IjoiMjAyNi0wMS0zMVQwOTowMDowMFoiLCJpIjoicSJ9","approval_mode":"human","org_id":"acme"}`,
		`{"auth_token":"ctalk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"auth_token":"` + strings.Repeat("x", 100000) + `"}`,
		`{"unknown":true}`,
	}
	for _, tool := range tools {
		for _, args := range odd {
			bodies = append(bodies, toolCall(tool.name, args))
		}
		// Each argument in turn carries a NUL, which Postgres cannot store
		// or compare, with plausible values in the others.
		for _, name := range tool.args {
			args := map[string]any{}
			for _, other := range tool.args {
				args[other] = plausibleArg(other)
			}
			args[name] = "a\x00b"
			b, _ := json.Marshal(args)
			bodies = append(bodies, toolCall(tool.name, string(b)))
		}
	}
	return bodies
}

// plausibleArg is a value for the argument name that gets past its first
// check, so that later ones are reached.
func plausibleArg(name string) any {
	switch name {
	case "org_id":
		return "acme"
	case "user_id", "to_user_id":
		return "bob"
	case "admin_password":
		return "acme-admin-password"
	case "password":
		return "bob-password"
	case "approval_mode":
		return "agent"
	case "role":
		return "member"
	case "limit", "timeout_s":
		return 1
	case "since", "until":
		return "2026-01-01T00:00:00Z"
	case "auth_token", "cursor", "signup_secret":
		return ""
	}
	return "x"
}

// TestMCPRequestBodies posts every known body (fuzzBodies) as
// FuzzMCPRequestBody posts what it makes up, on each engine, in the
// engine's protocol era (apitest.EraOf: both eras across CI's two passes):
// the suite runs it, under the race detector too, while the fuzz target
// starts from a few seeds, as a fuzzing run whose time is bounded first
// replays all of its seeds, and 960 took longer than CI's fuzzing step.
func TestMCPRequestBodies(t *testing.T) {
	t.Parallel()
	for _, e := range dbtest.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			fa := newFuzzApp(t, e)
			fa.era = apitest.EraOf(e)
			for _, body := range fuzzBodies(registeredTools(fa.app)) {
				fa.check(t, body)
			}
		})
	}
}

// FuzzMCPRequestBody posts arbitrary bodies to /mcp in both protocol eras,
// with and without a valid bearer token, and checks that the server never
// answers 5xx, never panics and never logs an internal error. It runs on
// SQLite, and on Postgres too when TEST_DATABASE_URL is set. Its seeds are
// the envelopes and one call of each tool, which CI's fuzzing step gets
// through in seconds before it makes up new bodies; the rest of the known
// bodies are TestMCPRequestBodies's.
func FuzzMCPRequestBody(f *testing.F) {
	apps := []*fuzzApp{newFuzzApp(f, db.SQLite)}
	if os.Getenv("TEST_DATABASE_URL") != "" {
		apps = append(apps, newFuzzApp(f, db.Postgres))
	} else {
		// Skipping would drop the SQLite half too: say what is left out.
		f.Log("SQLite only, Postgres skipped: TEST_DATABASE_URL is not set (.ci/run sets it; see README)")
	}
	tools := registeredTools(apps[0].app)
	sort.Slice(tools, func(i, j int) bool { return tools[i].name < tools[j].name })
	seeds := fuzzEnvelopes()
	for _, tool := range tools {
		seeds = append(seeds, toolCall(tool.name, `{}`))
	}
	for _, body := range seeds {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, fa := range apps {
			fa.check(t, string(raw))
		}
	})
}

// check posts body in each era, without and with the token, and fails on a
// 5xx answer or a logged internal error.
func (fa *fuzzApp) check(t *testing.T, body string) {
	t.Helper()
	for _, withToken := range []bool{false, true} {
		token := ""
		if withToken {
			token = fa.token
		}
		requests := []struct{ era, body, session string }{
			{testkit.EraSessions, body, fa.sessions[withToken]},
			{testkit.EraStateless, body, ""},
		}
		if b := withStatelessMeta(body); b != body {
			requests = append(requests, struct{ era, body, session string }{testkit.EraStateless, b, ""})
		}
		for _, r := range requests {
			if fa.era != "" && r.era != fa.era {
				continue
			}
			fa.logs.Take()
			rec := fa.post(r.body, r.era, token, r.session)
			logs := fa.logs.Take()
			who := "anonymous"
			if withToken {
				who = "with a token"
			}
			if rec.Code >= 500 {
				t.Fatalf("%s, %s, %s: POST /mcp %.500q: status %d, body %.500s\nlog:\n%s", fa.engine, r.era, who, r.body, rec.Code, rec.Body, logs)
			}
			if bad := errorLines(logs); len(bad) > 0 {
				t.Fatalf("%s, %s, %s: POST /mcp %.500q: status %d, logged errors:\n%s", fa.engine, r.era, who, r.body, rec.Code, strings.Join(bad, "\n"))
			}
		}
		if withToken {
			// A fuzzed logout revokes the token; later inputs need one.
			if _, err := fa.auth.Authenticate(dbtest.Operator(), fa.token); err != nil {
				fa.login(t)
			}
		}
	}
}
