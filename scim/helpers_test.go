package scim_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
)

// env is a ctalk server on a real port over a fresh database, with org
// acme (alice, admin; bob and carol, members, each signed in over MCP) and
// a SCIM token for it.
type env struct {
	t     *testing.T
	srv   *apitest.Server
	mcp   map[string]*mcp.ClientSession
	token string
}

// each runs fn once per engine, in parallel.
func each(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			fn(t, start(t, engine))
		})
	}
}

func start(t *testing.T, engine db.Engine) *env {
	t.Helper()
	srv := apitest.Start(t, dbtest.Open(t, engine))
	e := &env{t: t, srv: srv}
	e.mcp = apitest.Org(t, srv.URL, testkit.EraStateless, "acme")
	e.token = e.newToken("acme", "alice")
	return e
}

// newToken makes a SCIM token of org as its admin would.
func (e *env) newToken(org, admin string) string {
	e.t.Helper()
	raw, _, err := e.srv.SCIM.CreateToken(dbtest.Operator(), ctalk.Caller{OrgID: org, UserID: admin, Admin: true}, "Okta", 90)
	if err != nil {
		e.t.Fatal(err)
	}
	return raw
}

// call sends a SCIM request with token and returns the status, the
// decoded body (nil when empty) and the response.
func call(t testing.TB, base, token, method, path, body string) (int, map[string]any, *http.Response) {
	t.Helper()
	return callWith(t, base, token, method, path, body, nil)
}

// callWith is call with the headers hdr besides.
func callWith(t testing.TB, base, token, method, path, body string, hdr http.Header) (int, map[string]any, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithTimeout(dbtest.Operator(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+"/scim/v2"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/scim+json; charset=utf-8")
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if len(b) == 0 {
		return resp.StatusCode, nil, resp
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: %d %q is not a JSON object", method, path, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/scim+json") {
		t.Errorf("%s %s: Content-Type %q, want application/scim+json", method, path, ct)
	}
	return resp.StatusCode, m, resp
}

// do is call with the env's server and token.
func (e *env) do(method, path, body string) (int, map[string]any) {
	e.t.Helper()
	code, m, _ := call(e.t, e.srv.URL, e.token, method, path, body)
	return code, m
}

// ok sends a SCIM request and checks its status.
func (e *env) ok(what string, status int, method, path, body string) map[string]any {
	e.t.Helper()
	code, m := e.do(method, path, body)
	if code != status {
		e.t.Fatalf("%s: %d %v, want %d", what, code, m, status)
	}
	return m
}

// refusal checks a SCIM error: its status, scimType and a part of its
// detail.
func refusal(t *testing.T, what string, code int, m map[string]any, status int, scimType, detail string) {
	t.Helper()
	schemas, _ := m["schemas"].([]any)
	if code != status || m["status"] != strconv.Itoa(status) || len(schemas) != 1 || schemas[0] != "urn:ietf:params:scim:api:messages:2.0:Error" ||
		(scimType != "" && m["scimType"] != scimType) || !strings.Contains(m["detail"].(string), detail) {
		t.Errorf("%s: %d %v; want %d, scimType %q, detail with %q", what, code, m, status, scimType, detail)
	}
}

// total is a list response's totalResults.
func total(m map[string]any) int {
	n, _ := m["totalResults"].(float64)
	return int(n)
}

// resources are a list response's Resources.
func resources(m map[string]any) []map[string]any {
	var out []map[string]any
	list, _ := m["Resources"].([]any)
	for _, r := range list {
		out = append(out, r.(map[string]any))
	}
	return out
}

// member reports whether userID is a current member of acme, as orgs
// reads it.
func (e *env) member(userID string) bool {
	_, err := e.srv.Orgs.User(dbtest.Operator(), "acme", userID)
	if err != nil && ctalk.ErrorCode(err) != ctalk.ENotFound {
		e.t.Fatal(err)
	}
	return err == nil
}

// bobLeaving sets acme's departure_questions to departure, makes alice
// bob's away delegate, and links bob, by his address, as the identity
// provider's user.
func (e *env) bobLeaving(departure string) {
	e.t.Helper()
	ctx := dbtest.Operator()
	if _, err := e.srv.Orgs.SetSettings(ctx, "acme", orgs.Settings{DepartureQuestions: departure}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.srv.Orgs.SetAway(ctx, ctalk.Caller{OrgID: "acme", UserID: "bob"}, orgs.Away{Until: time.Now().Add(time.Hour), Delegate: "alice"}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.srv.Orgs.SetEmail(ctx, "acme", "bob", "bob@acme.test"); err != nil {
		e.t.Fatal(err)
	}
	e.ok("link bob", 201, "POST", "/Users", `{"userName":"bob@acme.test","name":{"givenName":"Bob","familyName":"B"},"active":true}`)
}
