package scim_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
)

// filter is a list's query with a filter, as IdPs send it.
func filter(expr string, more ...string) string {
	q := "/Users?filter=" + url.QueryEscape(expr)
	for _, m := range more {
		q += "&" + m
	}
	return q
}

// TestOktaSequence drives the calls Okta's SCIM 2.0 client makes, in the
// order its documentation gives: a look-up by userName before the create,
// the create, reads, a profile push by PUT, deactivation and reactivation
// by PATCH of active, and the paging of an import.
func TestOktaSequence(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		m := e.ok("look-up before create", 200, "GET", "/Users", "")
		if total(m) != 0 {
			t.Fatalf("a new org lists %v", m)
		}
		m = e.ok("Okta's look-up", 200, "GET", filter(`userName eq "jane.doe@acme.test"`, "startIndex=1", "count=100"), "")
		if total(m) != 0 || m["schemas"].([]any)[0] != "urn:ietf:params:scim:api:messages:2.0:ListResponse" {
			t.Fatalf("look-up of nobody: %v", m)
		}
		code, m, resp := call(t, e.srv.URL, e.token, "POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],
			"userName":"jane.doe@acme.test","name":{"givenName":"Jane","familyName":"Doe"},
			"emails":[{"primary":true,"value":"jane.doe@acme.test","type":"work"}],"displayName":"Jane Doe","locale":"en-US",
			"externalId":"00u1abcd","groups":[],"password":"Sup3rS3cret!","active":true}`)
		if code != 201 {
			t.Fatalf("create: %d %v", code, m)
		}
		if m["id"] != "jane-doe" || m["userName"] != "jane.doe@acme.test" || m["active"] != true || m["externalId"] != "00u1abcd" ||
			resp.Header.Get("Location") != e.srv.URL+"/scim/v2/Users/jane-doe" {
			t.Fatalf("created %v at %q", m, resp.Header.Get("Location"))
		}
		if !e.member("jane-doe") {
			t.Fatal("the created user is no member")
		}
		got := e.ok("get", 200, "GET", "/Users/jane-doe", "")
		if got["displayName"] != "Jane Doe" || got["emails"].([]any)[0].(map[string]any)["value"] != "jane.doe@acme.test" {
			t.Errorf("get: %v", got)
		}
		m = e.ok("look-up in another case", 200, "GET", filter(`userName eq "Jane.Doe@ACME.test"`), "")
		if total(m) != 1 || resources(m)[0]["id"] != "jane-doe" {
			t.Errorf("look-up: %v", m)
		}
		code, m = e.do("POST", "/Users", `{"userName":"JANE.DOE@acme.test","name":{"givenName":"J"},"active":true}`)
		refusal(t, "a second create of the userName", code, m, 409, "uniqueness", "taken")

		m = e.ok("profile push", 200, "PUT", "/Users/jane-doe", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"id":"jane-doe",
			"userName":"jane.doe@acme.test","name":{"givenName":"Jane","familyName":"Roe"},"emails":[{"primary":true,"value":"jane.roe@acme.test","type":"work"}],
			"active":true}`)
		if m["displayName"] != "Jane Roe" || m["emails"].([]any)[0].(map[string]any)["value"] != "jane.roe@acme.test" {
			t.Errorf("after the push: %v", m)
		}
		if u, err := e.srv.Orgs.User(dbtest.Operator(), "acme", "jane-doe"); err != nil || u.Name != "Jane Roe" || u.Email != "jane.roe@acme.test" {
			t.Errorf("the member after the push: %+v %v", u, err)
		}

		deactivate := `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"active":false}}]}`
		m = e.ok("deactivate", 200, "PATCH", "/Users/jane-doe", deactivate)
		if m["active"] != false || e.member("jane-doe") {
			t.Fatalf("after deactivation: %v, member %v", m, e.member("jane-doe"))
		}
		if m := e.ok("get a deactivated user", 200, "GET", "/Users/jane-doe", ""); m["active"] != false {
			t.Errorf("deactivated user reads %v", m)
		}
		// A PUT that leaves active and emails out changes neither.
		m = e.ok("a PUT without active", 200, "PUT", "/Users/jane-doe", `{"userName":"jane.doe@acme.test","name":{"givenName":"Jane","familyName":"Roe"}}`)
		if m["active"] != false || e.member("jane-doe") || m["emails"].([]any)[0].(map[string]any)["value"] != "jane.roe@acme.test" {
			t.Fatalf("a PUT without active or emails: %v", m)
		}
		m = e.ok("reactivate", 200, "PATCH", "/Users/jane-doe", strings.Replace(deactivate, "false", "true", 1))
		if m["active"] != true || !e.member("jane-doe") {
			t.Fatalf("after reactivation: %v", m)
		}

		for _, n := range []string{"kim", "lee", "max"} {
			e.ok("create "+n, 201, "POST", "/Users", fmt.Sprintf(`{"userName":"%s@acme.test","name":{"givenName":"%s","familyName":"X"},"active":true}`, n, n))
		}
		var ids []string
		for _, start := range []int{1, 3, 5} {
			m := e.ok("page", 200, "GET", fmt.Sprintf("/Users?startIndex=%d&count=2", start), "")
			if total(m) != 4 || int(m["startIndex"].(float64)) != start {
				t.Errorf("page at %d: %v", start, m)
			}
			for _, r := range resources(m) {
				ids = append(ids, r["id"].(string))
			}
		}
		if strings.Join(ids, ",") != "jane-doe,kim,lee,max" {
			t.Errorf("the pages held %v", ids)
		}
		if m := e.ok("count=0", 200, "GET", "/Users?count=0", ""); total(m) != 4 || len(resources(m)) != 0 {
			t.Errorf("count=0: %v", m)
		}
		// Each write is audited as the identity provider's, with the
		// member's id and never a value it sent.
		testkit.WaitFor(t, 10*time.Second, "the audit of the SCIM writes", func() (bool, error) {
			n := apitest.CountRows(t, e.srv.DB, `SELECT COUNT(*) FROM audit_events WHERE org_id = 'acme' AND factor = 'scim_token'
				AND ((tool = 'scim:create_user' AND outcome = 'ok') OR (tool = 'scim:create_user' AND outcome = 'conflict') OR tool = 'scim:replace_user' OR tool = 'scim:patch_user')`)
			if n != 9 {
				return false, fmt.Errorf("%d events, want 9", n)
			}
			return true, nil
		})
		if n := apitest.CountRows(t, e.srv.DB, `SELECT COUNT(*) FROM audit_events WHERE org_id = 'acme' AND tool = 'scim:patch_user' AND ids = '["jane-doe"]'`); n != 2 {
			t.Errorf("%d patch events name jane-doe", n)
		}
		if n := apitest.CountRows(t, e.srv.DB, `SELECT COUNT(*) FROM audit_events WHERE ids LIKE '%acme.test%' OR ids LIKE '%Roe%'`); n != 0 {
			t.Errorf("%d audit events carry a value sent", n)
		}
	})
}

// TestEntraSequence drives the calls Microsoft Entra ID's provisioning
// service makes, with its own forms: the probe by a random userName, the
// create, a look-up by externalId, PATCHes with "Replace" and "Add" in
// capitals, a value object without a path, a boolean as the string
// "False", attributes ctalk does not keep, and the delete.
func TestEntraSequence(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		m := e.ok("the probe", 200, "GET", filter(`userName eq "7f2c9a4e-55b1-4a4c-9a7e-1b3f2d9e8c11"`), "")
		if total(m) != 0 {
			t.Fatalf("the probe: %v", m)
		}
		m = e.ok("create", 201, "POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
			"externalId":"0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef","userName":"Test_User_ab6490ee@contoso.com","active":true,
			"addresses":[{"primary":true,"type":"work","country":"US"}],"displayName":"Test User",
			"emails":[{"primary":true,"type":"work","value":"Test_User_fd0ea19b@contoso.com"}],
			"meta":{"resourceType":"User"},"name":{"formatted":"Test User","familyName":"User","givenName":"Test"},
			"phoneNumbers":[{"type":"work","value":"123-456-7890"}],"roles":[],"title":"Engineer",
			"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"department":"Sales"}}`)
		id := m["id"].(string)
		if id != "test_user_ab6490ee" && id != "test-user-ab6490ee" {
			t.Fatalf("created %v", m)
		}
		m = e.ok("look-up by externalId", 200, "GET", filter(`externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"`), "")
		if total(m) != 1 || resources(m)[0]["id"] != id {
			t.Fatalf("by externalId: %v", m)
		}
		m = e.ok("patch with Replace and Add", 200, "PATCH", "/Users/"+id, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[
			{"op":"Replace","path":"emails[type eq \"work\"].value","value":"updated@contoso.com"},
			{"op":"Replace","path":"name.familyName","value":"Updated"},
			{"op":"Add","path":"title","value":"Manager"},
			{"op":"Add","path":"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department","value":"Ops"}]}`)
		if m["emails"].([]any)[0].(map[string]any)["value"] != "updated@contoso.com" || m["name"].(map[string]any)["familyName"] != "Updated" {
			t.Errorf("after the patch: %v", m)
		}
		m = e.ok("a value object without a path", 200, "PATCH", "/Users/"+id, `{"Operations":[{"op":"Replace","value":{"displayName":"Tess User","name.givenName":"Tess","externalId":"ext-2"}}]}`)
		if m["displayName"] != "Tess User" || m["name"].(map[string]any)["givenName"] != "Tess" || m["externalId"] != "ext-2" {
			t.Errorf("after the value object: %v", m)
		}
		m = e.ok(`active "False"`, 200, "PATCH", "/Users/"+id, `{"Operations":[{"op":"Replace","path":"active","value":"False"}]}`)
		if m["active"] != false || e.member(id) {
			t.Fatalf(`after active "False": %v`, m)
		}
		for _, bad := range []struct{ body, scimType, detail string }{
			{`{"Operations":[{"op":"Replace","path":"active","value":"maybe"}]}`, "invalidValue", "active must be true or false"},
			{`{"Operations":[{"op":"Move","path":"active","value":true}]}`, "invalidSyntax", "not add, replace or remove"},
			{`{"Operations":[{"op":"remove","path":"userName"}]}`, "mutability", "userName"},
			{`{"Operations":[]}`, "invalidSyntax", "Operations is required"},
			{`{"Operations":`, "invalidSyntax", "not the JSON"},
			{`{"Operations":[{"op":"Replace","path":"emails[type eq \"work\"].value","value":"not an address"}]}`, "invalidValue", "not an email address"},
		} {
			code, m := e.do("PATCH", "/Users/"+id, bad.body)
			refusal(t, "PATCH "+bad.body, code, m, 400, bad.scimType, bad.detail)
		}
		code, m := e.do("GET", filter(`displayName co "Tess"`), "")
		refusal(t, "an unsupported filter", code, m, 400, "invalidFilter", "userName, externalId or id")
		code, m = e.do("GET", "/Users?startIndex=x", "")
		refusal(t, "a startIndex that is no number", code, m, 400, "invalidValue", "whole number")

		if code, m := e.do("DELETE", "/Users/"+id, ""); code != 204 || m != nil {
			t.Fatalf("delete: %d %v", code, m)
		}
		code, m = e.do("GET", "/Users/"+id, "")
		refusal(t, "a deleted user", code, m, 404, "", "not found")
		code, m = e.do("DELETE", "/Users/"+id, "")
		refusal(t, "a second delete", code, m, 404, "", "not found")
		// The userName is free again: a new member, under a new id.
		m = e.ok("create again", 201, "POST", "/Users", `{"userName":"Test_User_ab6490ee@contoso.com","active":true}`)
		if m["id"] == id {
			t.Errorf("a new member got the deleted member's id %s", id)
		}
	})
}

// TestDiscovery: the three discovery endpoints answer what the service
// does, Groups included.
func TestDiscovery(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		m := e.ok("ServiceProviderConfig", 200, "GET", "/ServiceProviderConfig", "")
		if m["patch"].(map[string]any)["supported"] != true || m["bulk"].(map[string]any)["supported"] != false || m["authenticationSchemes"].([]any)[0].(map[string]any)["type"] != "oauthbearertoken" {
			t.Errorf("ServiceProviderConfig: %v", m)
		}
		if m := e.ok("ResourceTypes", 200, "GET", "/ResourceTypes", ""); total(m) != 2 || resources(m)[0]["endpoint"] != "/Users" || resources(m)[1]["endpoint"] != "/Groups" {
			t.Errorf("ResourceTypes: %v", m)
		}
		if m := e.ok("ResourceTypes/User", 200, "GET", "/ResourceTypes/User", ""); m["schema"] != "urn:ietf:params:scim:schemas:core:2.0:User" {
			t.Errorf("ResourceTypes/User: %v", m)
		}
		if m := e.ok("ResourceTypes/Group", 200, "GET", "/ResourceTypes/Group", ""); m["schema"] != "urn:ietf:params:scim:schemas:core:2.0:Group" {
			t.Errorf("ResourceTypes/Group: %v", m)
		}
		if m := e.ok("Schemas", 200, "GET", "/Schemas", ""); total(m) != 2 || len(resources(m)[0]["attributes"].([]any)) != 6 || len(resources(m)[1]["attributes"].([]any)) != 3 {
			t.Errorf("Schemas: %v", m)
		}
		e.ok("Schemas/User", 200, "GET", "/Schemas/urn:ietf:params:scim:schemas:core:2.0:User", "")
		e.ok("Schemas/Group", 200, "GET", "/Schemas/urn:ietf:params:scim:schemas:core:2.0:Group", "")
		if m := e.ok("Groups", 200, "GET", "/Groups", ""); total(m) != 0 {
			t.Errorf("Groups: %v", m)
		}
		code, m := e.do("DELETE", "/Groups", "")
		refusal(t, "DELETE /Groups", code, m, 405, "", "not served")
		code, m = e.do("GET", "/Nothing", "")
		refusal(t, "an unknown endpoint", code, m, 404, "", "no SCIM endpoint")
		code, m = e.do("DELETE", "/Users", "")
		refusal(t, "DELETE /Users", code, m, 405, "", "not served")
	})
}

// TestTokensAndTenancy: only a live SCIM token of the org is taken; an
// agent's token, a revoked or expired SCIM token and none are refused with
// 401; another org's token finds none of this org's users.
func TestTokensAndTenancy(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		e.ok("create", 201, "POST", "/Users", `{"userName":"jane@acme.test","active":true}`)
		apitest.Org(t, e.srv.URL, testkit.EraStateless, "other")
		other := e.newToken("other", "alice")
		for _, path := range []string{"/Users/jane", "/Users/alice"} {
			for _, method := range []string{"GET", "PUT", "PATCH", "DELETE"} {
				body := ""
				switch method {
				case "PUT":
					body = `{"userName":"jane@acme.test","active":false}`
				case "PATCH":
					body = `{"Operations":[{"op":"replace","path":"active","value":false}]}`
				}
				code, m, _ := call(t, e.srv.URL, other, method, path, body)
				refusal(t, "another org's "+method+" "+path, code, m, 404, "", "not found")
			}
		}
		// Members who are not SCIM users are not SCIM's to touch.
		code, m := e.do("PATCH", "/Users/alice", `{"Operations":[{"op":"replace","path":"active","value":false}]}`)
		refusal(t, "a member never provisioned", code, m, 404, "", "not found")
		_, m, _ = call(t, e.srv.URL, other, "GET", filter(`userName eq "jane@acme.test"`), "")
		if total(m) != 0 {
			t.Errorf("another org's look-up found %v", m)
		}
		if !e.member("jane") || !e.member("alice") {
			t.Fatal("another org's token changed a member")
		}

		agent := apitest.Login(t, e.mcp["alice"], "acme", "alice")
		for name, token := range map[string]string{"no token": "", "an agent's token": agent, "garbage": "not-a-token", "a made-up token": "ctalk_" + strings.Repeat("A", 43)} {
			code, m, resp := call(t, e.srv.URL, token, "GET", "/Users", "")
			refusal(t, name, code, m, 401, "", "")
			if resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s: no WWW-Authenticate", name)
			}
		}
		// An admin's SCIM token is no token at /mcp.
		if code, _ := apitest.REST(t, e.srv.URL, e.token, "GET", "/api/v1/channels", ""); code != 401 {
			t.Errorf("a SCIM token at the REST mirror: %d, want 401", code)
		}

		tokens, err := e.srv.SCIM.Tokens(dbtest.Operator(), "acme")
		if err != nil || len(tokens) != 1 {
			t.Fatalf("tokens: %v %v", tokens, err)
		}
		if err := e.srv.SCIM.RevokeToken(dbtest.Operator(), "other", tokens[0].ID); err == nil {
			t.Error("another org revoked acme's token")
		}
		if err := e.srv.SCIM.RevokeToken(dbtest.Operator(), "acme", tokens[0].ID); err != nil {
			t.Fatal(err)
		}
		code, m, _ = call(t, e.srv.URL, e.token, "GET", "/Users", "")
		refusal(t, "a revoked token", code, m, 401, "", "not a live SCIM token")

		if _, err := dbtest.Exec(e.srv.DB, `UPDATE scim_tokens SET expires_at = $1 WHERE org_id = 'other'`, time.Now().Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		code, m, _ = call(t, e.srv.URL, other, "GET", "/Users", "")
		refusal(t, "an expired token", code, m, 401, "", "not a live SCIM token")
	})
}

// TestDeactivationEndsEverything: a member the IdP deactivates is cut off
// at once: their wait for questions ends, refused, within a second, on
// Postgres on another replica than the one SCIM called; their tokens are
// refused; the question waiting for them goes back to its asker declined;
// and a second deactivation racing the first changes nothing more.
func TestDeactivationEndsEverything(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		ctx := dbtest.Operator()
		// bob's replica: another server on the same database where
		// replicas share one (Postgres), else the same server.
		replica := e.srv
		if e.srv.DB.Engine == db.Postgres {
			replica = apitest.Start(t, e.srv.DB)
		}
		if _, err := e.srv.Orgs.SetEmail(ctx, "acme", "bob", "bob@acme.test"); err != nil {
			t.Fatal(err)
		}
		// Okta's create of a person who is a member already links them.
		m := e.ok("link bob", 201, "POST", "/Users", `{"userName":"bob@acme.test","name":{"givenName":"Bob","familyName":"B"},"active":true}`)
		if m["id"] != "bob" {
			t.Fatalf("linked %v, want bob", m)
		}
		asked := testkit.OK(t, e.mcp["carol"], "ask_person", map[string]any{"to_user_id": "bob", "question": "Where is the deploy runbook?", "ask_anyway": true})
		msgID := asked["message_id"].(string)

		bobToken := apitest.Login(t, e.mcp["alice"], "acme", "bob")
		bob := testkit.Connect(t, replica.URL, testkit.EraStateless, bobToken)
		// Handed the question, bob's agent waits for the next one.
		testkit.OK(t, bob, "check_inbox", nil)
		before := replica.Broker.Waiting()
		ended := make(chan string, 1)
		go func() {
			res, err := bob.CallTool(t.Context(), &mcp.CallToolParams{Name: "wait_for_inbox", Arguments: map[string]any{"timeout_s": 60}})
			if err != nil {
				ended <- "error " + err.Error()
				return
			}
			ended <- fmt.Sprintf("isError=%v %s", res.IsError, testkit.Text(res))
		}()
		apitest.WaitForWaiters(t, before+1, replica.Broker)

		deactivate := `{"Operations":[{"op":"Replace","path":"active","value":"False"}]}`
		var wg sync.WaitGroup
		codes := make([]int, 2)
		startAt := time.Now()
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i], _, _ = call(t, e.srv.URL, e.token, "PATCH", "/Users/bob", deactivate)
			}()
		}
		var got string
		select {
		case got = <-ended:
		case <-time.After(10 * time.Second):
			t.Fatal("bob's wait did not end")
		}
		took := time.Since(startAt)
		wg.Wait()
		t.Logf("bob's wait ended %v after the deactivation was sent", took.Round(time.Millisecond))
		if took > time.Second {
			t.Errorf("bob's wait ended %v after the deactivation, want within a second", took)
		}
		if !strings.Contains(got, "nauthorized") && !strings.Contains(got, "no longer") {
			t.Errorf("bob's wait ended with %s; want it refused", got)
		}
		if codes[0] != 200 || codes[1] != 200 {
			t.Errorf("two deactivations at once: %v, want both 200", codes)
		}
		if code, _ := apitest.REST(t, replica.URL, bobToken, "GET", "/api/v1/channels", ""); code != 401 {
			t.Errorf("bob's token after the deactivation: %d, want 401", code)
		}
		apitest.AwaitRefused(t, bob)
		var status, reason string
		if err := e.srv.DB.QueryRow(ctx, `SELECT status, resolution FROM questions WHERE org_id = 'acme' AND id = $1`, msgID).Scan(&status, &reason); err != nil {
			t.Fatal(err)
		}
		if status != inbox.StatusDeclined || reason != inbox.DepartedReason {
			t.Errorf("carol's question: %s %q, want declined %q", status, reason, inbox.DepartedReason)
		}
		if n := apitest.CountRows(t, e.srv.DB, `SELECT COUNT(*) FROM notify_events WHERE org_id = 'acme' AND subject = $1 AND kind = 'declined'`, msgID); n > 1 {
			t.Errorf("carol was told %d times", n)
		}
		if n := apitest.CountRows(t, e.srv.DB, `SELECT COUNT(*) FROM tokens WHERE org_id = 'acme' AND user_id = 'bob' AND revoked_at IS NULL`); n != 0 {
			t.Errorf("bob holds %d live tokens", n)
		}
	})
}

// TestLastAdminAndAdmins: the IdP cannot deactivate the org's last admin
// (the break-glass account stays), nor change an admin's address, to
// which password reset links go.
func TestLastAdminAndAdmins(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		if _, err := e.srv.Orgs.SetEmail(dbtest.Operator(), "acme", "alice", "alice@acme.test"); err != nil {
			t.Fatal(err)
		}
		e.ok("link alice", 201, "POST", "/Users", `{"userName":"alice@acme.test","active":true}`)
		code, m := e.do("PUT", "/Users/alice", `{"userName":"alice@acme.test","emails":[{"value":"mallory@evil.test","primary":true}],"active":true}`)
		refusal(t, "an admin's address", code, m, 400, "mutability", "only in ctalk's web app")
		code, m = e.do("PATCH", "/Users/alice", `{"Operations":[{"op":"replace","path":"active","value":false}]}`)
		refusal(t, "the last admin", code, m, 409, "mutability", "last admin")
		code, m = e.do("DELETE", "/Users/alice", "")
		refusal(t, "delete the last admin", code, m, 409, "mutability", "last admin")
		if !e.member("alice") {
			t.Fatal("the last admin was removed")
		}
		if u, _ := e.srv.Orgs.User(dbtest.Operator(), "acme", "alice"); u.Email != "alice@acme.test" {
			t.Errorf("alice's address is %q", u.Email)
		}
		// SCIM makes members only, whatever it sends.
		m = e.ok("create with roles", 201, "POST", "/Users", `{"userName":"eve@acme.test","roles":[{"value":"admin"}],"active":true}`)
		if u, _ := e.srv.Orgs.User(dbtest.Operator(), "acme", m["id"].(string)); u.Role != "member" {
			t.Errorf("a SCIM user's role is %q", u.Role)
		}
	})
}

// TestCreateRace: creates of one userName racing each other make one
// member; the others are told the userName is taken.
func TestCreateRace(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		const n = 6
		codes := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i], _, _ = call(t, e.srv.URL, e.token, "POST", "/Users", `{"userName":"Race@acme.test","name":{"givenName":"R"},"active":true}`)
			}()
		}
		wg.Wait()
		created := 0
		for _, c := range codes {
			switch c {
			case 201:
				created++
			case 409:
			default:
				t.Errorf("a racing create answered %d", c)
			}
		}
		if created != 1 {
			t.Errorf("%d creates succeeded (%v), want 1", created, codes)
		}
		if got := apitest.CountRows(t, e.srv.DB, `SELECT COUNT(*) FROM scim_users WHERE org_id = 'acme'`); got != 1 {
			t.Errorf("%d SCIM users", got)
		}
		if got := apitest.CountRows(t, e.srv.DB, `SELECT COUNT(*) FROM users WHERE org_id = 'acme' AND id LIKE 'race%'`); got != 1 {
			t.Errorf("%d members made", got)
		}
	})
}

// TestHostileInput: values no member could have are refused with SCIM's
// 400 and a detail that names the attribute, never a 500; nothing is made.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		long := strings.Repeat("é", 100000)
		for _, bad := range []struct{ body, detail string }{
			{`{"userName":"` + long + `"}`, "userName is 100000 characters"},
			{`{"userName":"x@acme.test","displayName":"` + long + `"}`, "displayName is 100000 characters"},
			{`{"userName":"x@acme.test","name":{"givenName":"` + long + `"}}`, "givenName is 100000 characters"},
			{`{"userName":"nul\u0000@acme.test"}`, "NUL"},
			{`{"userName":"x@acme.test","externalId":"a\u0000"}`, "NUL"},
			{`{"userName":"   "}`, "userName is required"},
			{`{"userName":42}`, "userName must be a string"},
			{`{"userName":"x@acme.test","active":"perhaps"}`, "active must be true or false"},
			{`{"userName":"x@acme.test","emails":"x"}`, "not an email address"},
			{`{"userName":"x@acme.test","emails":[1]}`, "emails must be a list"},
			{`{"userName":"x@acme.test","emails":[{"value":"<script>@x"}]}`, "not an email address"},
			{`[1,2]`, "not the JSON object"},
			{`{"userName":"x@acme.test","name":"Jane"}`, "name must be an object"},
		} {
			code, m := e.do("POST", "/Users", bad.body)
			refusal(t, "create "+ctalkShort(bad.body), code, m, 400, "", bad.detail)
		}
		if n := apitest.CountRows(t, e.srv.DB, `SELECT COUNT(*) FROM scim_users`); n != 0 {
			t.Errorf("%d users made of hostile input", n)
		}
		for _, path := range []string{"/Users/" + url.PathEscape(long), "/Users/%00", "/Users/..%2F..%2Fetc", "/Users/ctalk_x"} {
			code, m := e.do("GET", path, "")
			refusal(t, "GET "+ctalkShort(path), code, m, 404, "", "")
		}
		code, m := e.do("GET", filter(`userName eq "a" or userName eq "b"`), "")
		refusal(t, "a filter with or", code, m, 400, "invalidFilter", "one comparison")
		code, m = e.do("GET", filter(`userName eq "unterminated`), "")
		refusal(t, "an unterminated string", code, m, 400, "invalidFilter", "")
	})
}

func ctalkShort(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// TestDeprovisionHandsQuestionsToTheDelegate: where the org's
// departure_questions is delegate, the identity provider's deletion of bob
// forwards the question waiting for him to alice, his away delegate, and
// the asker's next check sees it there.
func TestDeprovisionHandsQuestionsToTheDelegate(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.bobLeaving(orgs.DepartureDelegate)
		msgID := testkit.OK(t, e.mcp["carol"], "ask_person", map[string]any{"to_user_id": "bob", "question": "Where is the deploy runbook?", "ask_anyway": true})["message_id"].(string)
		if code, _, _ := call(t, e.srv.URL, e.token, "DELETE", "/Users/bob", ""); code != http.StatusNoContent {
			t.Fatalf("deleting bob: %d", code)
		}
		r := testkit.List(testkit.OK(t, e.mcp["carol"], "check_replies", nil), "updates")
		if len(r) != 1 || testkit.Field(r[0], "message_id") != msgID || testkit.Field(r[0], "to_user_id") != "alice" || testkit.Field(r[0], "status") != "pending" {
			t.Fatalf("carol's question after bob's deprovisioning = %v; want it pending with alice", r)
		}
		qs := testkit.List(testkit.OK(t, e.mcp["alice"], "check_inbox", nil), "questions")
		if len(qs) != 1 || testkit.Field(qs[0], "message_id") != msgID {
			t.Fatalf("alice's inbox = %v", qs)
		}
	})
}
