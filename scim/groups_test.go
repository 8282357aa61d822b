package scim_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// provision creates SCIM users of acme by userName and returns their ids.
func (e *env) provision(userNames ...string) []string {
	e.t.Helper()
	var ids []string
	for _, u := range userNames {
		m := e.ok("create "+u, 201, "POST", "/Users", fmt.Sprintf(`{"userName":%q,"active":true}`, u))
		ids = append(ids, m["id"].(string))
	}
	return ids
}

// memberIDs are the values of a Group resource's members, sorted.
func memberIDs(m map[string]any) []string {
	var ids []string
	list, _ := m["members"].([]any)
	for _, x := range list {
		ids = append(ids, x.(map[string]any)["value"].(string))
	}
	sort.Strings(ids)
	return ids
}

// channelMembers are the members of acme's channel name, as channels
// holds them, sorted, and whether the channel is private and archived.
func (e *env) channelMembers(name string) (members []string, private, archived bool) {
	e.t.Helper()
	ctx := dbtest.Operator()
	var at sql.NullTime
	if err := e.srv.DB.QueryRow(ctx, `SELECT private, archived_at FROM channels WHERE org_id = 'acme' AND name = $1`, name).Scan(&private, &at); err != nil {
		e.t.Fatalf("channel #%s: %v", name, err)
	}
	rows, err := e.srv.DB.Query(ctx, `SELECT user_id FROM channel_members WHERE org_id = 'acme' AND channel = $1 ORDER BY user_id`, name)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			e.t.Fatal(err)
		}
		members = append(members, id)
	}
	return members, private, at.Valid
}

// TestOktaGroups drives the calls of Okta's Group Push, in the order its
// SCIM 2.0 guide gives: a look-up by displayName, the create with its
// members, a read, the list it pages, a rename by PATCH with a value
// object, members added and removed (members[value eq "..."]) by PATCH,
// the full PUT, and the delete. Each change is the channel's, and
// audited with the group's id only.
func TestOktaGroups(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		ids := e.provision("jane@acme.test", "john@acme.test", "kim@acme.test")
		jane, john, kim := ids[0], ids[1], ids[2]
		m := e.ok("look-up", 200, "GET", "/Groups?filter="+url.QueryEscape(`displayName eq "Engineering"`)+"&startIndex=1&count=100", "")
		if total(m) != 0 {
			t.Fatalf("look-up of no group: %v", m)
		}
		code, m, resp := call(t, e.srv.URL, e.token, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],
			"displayName":"Engineering","members":[{"value":"`+jane+`","display":"jane@acme.test"},{"value":"`+john+`","display":"john@acme.test"}]}`)
		if code != 201 || m["id"] != "engineering" || m["displayName"] != "Engineering" || resp.Header.Get("Location") != e.srv.URL+"/scim/v2/Groups/engineering" {
			t.Fatalf("create: %d %v at %q", code, m, resp.Header.Get("Location"))
		}
		if got := memberIDs(m); !slices.Equal(got, []string{jane, john}) {
			t.Errorf("created with members %v", got)
		}
		if got, private, archived := e.channelMembers("engineering"); !slices.Equal(got, []string{jane, john}) || !private || archived {
			t.Errorf("the channel: members %v, private %v, archived %v", got, private, archived)
		}
		m = e.ok("get", 200, "GET", "/Groups/engineering", "")
		if m["meta"].(map[string]any)["resourceType"] != "Group" || len(memberIDs(m)) != 2 {
			t.Errorf("get: %v", m)
		}
		m = e.ok("look-up in another case", 200, "GET", "/Groups?filter="+url.QueryEscape(`displayName eq "ENGINEERING"`), "")
		if total(m) != 1 || resources(m)[0]["id"] != "engineering" {
			t.Errorf("look-up: %v", m)
		}
		code, m = e.do("POST", "/Groups", `{"displayName":"engineering","members":[]}`)
		refusal(t, "a second group of the name", code, m, 409, "uniqueness", "taken")

		patch := func(what, ops string) map[string]any {
			t.Helper()
			return e.ok(what, 200, "PATCH", "/Groups/engineering", `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":`+ops+`}`)
		}
		m = patch("rename", `[{"op":"replace","value":{"id":"engineering","displayName":"Engineering Team"}}]`)
		if m["displayName"] != "Engineering Team" || m["id"] != "engineering" || len(memberIDs(m)) != 2 {
			t.Errorf("after the rename: %v", m)
		}
		m = patch("add", `[{"op":"add","path":"members","value":[{"value":"`+kim+`","display":"kim@acme.test"}]}]`)
		if got := memberIDs(m); !slices.Equal(got, []string{jane, john, kim}) {
			t.Errorf("after the add: %v", got)
		}
		m = patch("remove", `[{"op":"remove","path":"members[value eq \"`+john+`\"]"}]`)
		if got := memberIDs(m); !slices.Equal(got, []string{jane, kim}) {
			t.Errorf("after the remove: %v", got)
		}
		m = e.ok("PUT", 200, "PUT", "/Groups/engineering", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"id":"engineering",
			"displayName":"Engineering Team","members":[{"value":"`+john+`","display":"john@acme.test"}]}`)
		if got := memberIDs(m); !slices.Equal(got, []string{john}) {
			t.Errorf("after the PUT: %v", got)
		}
		if got, _, _ := e.channelMembers("engineering"); !slices.Equal(got, []string{john}) {
			t.Errorf("the channel after the PUT: %v", got)
		}

		// Pages, by id.
		for _, name := range []string{"Sales", "Support"} {
			e.ok("create "+name, 201, "POST", "/Groups", `{"displayName":"`+name+`"}`)
		}
		m = e.ok("page 2", 200, "GET", "/Groups?startIndex=2&count=1", "")
		if total(m) != 3 || len(resources(m)) != 1 || resources(m)[0]["id"] != "sales" || m["startIndex"] != 2.0 {
			t.Errorf("page 2: %v", m)
		}

		if code, m := e.do("DELETE", "/Groups/engineering", ""); code != 204 {
			t.Fatalf("delete: %d %v", code, m)
		}
		code, m = e.do("GET", "/Groups/engineering", "")
		refusal(t, "a deleted group", code, m, 404, "", "not found")
		if _, _, archived := e.channelMembers("engineering"); !archived {
			t.Error("the deleted group's channel is not archived")
		}
		// The name is free again; the channel of the new group is another.
		if m := e.ok("the name again", 201, "POST", "/Groups", `{"displayName":"Engineering"}`); m["id"] != "engineering-2" {
			t.Errorf("a new group of a deleted one's name: %v", m)
		}

		testkit.WaitFor(t, 10*time.Second, "the audit of the group writes", func() (bool, error) {
			n := apitest.CountRows(t, e.srv.DB, `SELECT COUNT(*) FROM audit_events WHERE org_id = 'acme' AND factor = 'scim_token'
				AND ((tool = 'scim:create_group' AND outcome = 'ok') OR tool = 'scim:patch_group' OR tool = 'scim:replace_group' OR tool = 'scim:delete_group')`)
			if n != 9 {
				return false, fmt.Errorf("%d events, want 9", n)
			}
			return true, nil
		})
		if n := apitest.CountRows(t, e.srv.DB, `SELECT COUNT(*) FROM audit_events WHERE org_id = 'acme' AND tool = 'scim:patch_group' AND ids = '["engineering"]'`); n != 3 {
			t.Errorf("%d patch events name engineering", n)
		}
		if n := apitest.CountRows(t, e.srv.DB, `SELECT COUNT(*) FROM audit_events WHERE ids LIKE '%Team%' OR ids LIKE '%acme.test%'`); n != 0 {
			t.Errorf("%d audit events hold a value sent", n)
		}
	})
}

// TestEntraGroups drives the calls Microsoft Entra ID's provisioning
// service makes for a group, as its SCIM guide shows them: a look-up by
// displayName without members, the create with an externalId, a read
// without members, PATCH with op in capitals adding and removing members
// by value lists, a replace of displayName by path, an add of externalId,
// a value object without a path, and the delete.
func TestEntraGroups(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		ids := e.provision("ann@acme.test", "ben@acme.test", "cat@acme.test")
		ann, ben, cat := ids[0], ids[1], ids[2]
		m := e.ok("look-up", 200, "GET", "/Groups?excludedAttributes=members&filter="+url.QueryEscape(`displayName eq "Sales EMEA"`), "")
		if total(m) != 0 {
			t.Fatalf("look-up: %v", m)
		}
		m = e.ok("create", 201, "POST", "/Groups", `{"externalId":"8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159","displayName":"Sales EMEA",
			"meta":{"resourceType":"Group"},"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"]}`)
		if m["id"] != "sales-emea" || m["externalId"] != "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159" || len(memberIDs(m)) != 0 {
			t.Fatalf("create: %v", m)
		}
		patch := func(what, ops string) map[string]any {
			t.Helper()
			return e.ok(what, 200, "PATCH", "/Groups/sales-emea", `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":`+ops+`}`)
		}
		m = patch("add members", `[{"op":"Add","path":"members","value":[{"$ref":null,"value":"`+ann+`"},{"$ref":null,"value":"`+ben+`"},{"$ref":null,"value":"`+cat+`"}]}]`)
		if got := memberIDs(m); !slices.Equal(got, []string{ann, ben, cat}) {
			t.Errorf("after the add: %v", got)
		}
		m = patch("remove members", `[{"op":"Remove","path":"members","value":[{"$ref":null,"value":"`+ben+`"}]}]`)
		if got := memberIDs(m); !slices.Equal(got, []string{ann, cat}) {
			t.Errorf("after the remove: %v", got)
		}
		m = patch("replace displayName", `[{"op":"Replace","path":"displayName","value":"Sales Europe"},{"op":"Add","path":"externalId","value":"ext-2"}]`)
		if m["displayName"] != "Sales Europe" || m["externalId"] != "ext-2" {
			t.Errorf("after the replace: %v", m)
		}
		m = patch("a value object without a path", `[{"op":"Add","value":{"members":[{"value":"`+ben+`"}]}},{"op":"Remove","path":"members[value eq \"`+ann+`\"]"}]`)
		if got := memberIDs(m); !slices.Equal(got, []string{ben, cat}) {
			t.Errorf("after the value object: %v", got)
		}
		m = e.ok("get without members", 200, "GET", "/Groups/sales-emea?excludedAttributes=members", "")
		if _, ok := m["members"]; ok || m["displayName"] != "Sales Europe" {
			t.Errorf("excludedAttributes=members: %v", m)
		}
		m = e.ok("look-up by the new name", 200, "GET", "/Groups?excludedAttributes=members&filter="+url.QueryEscape(`displayName eq "Sales Europe"`), "")
		if total(m) != 1 || resources(m)[0]["members"] != nil {
			t.Errorf("look-up: %v", m)
		}
		m = e.ok("look-up by externalId", 200, "GET", "/Groups?filter="+url.QueryEscape(`externalId eq "ext-2"`), "")
		if total(m) != 1 || len(memberIDs(resources(m)[0])) != 2 {
			t.Errorf("look-up by externalId: %v", m)
		}
		patch("remove every member", `[{"op":"Remove","path":"members"}]`)
		if got, _, _ := e.channelMembers("sales-emea"); len(got) != 0 {
			t.Errorf("after removing every member: %v", got)
		}
		if code, m := e.do("DELETE", "/Groups/sales-emea", ""); code != 204 {
			t.Fatalf("delete: %d %v", code, m)
		}
		code, m := e.do("DELETE", "/Groups/sales-emea", "")
		refusal(t, "a second delete", code, m, 404, "", "not found")
	})
}

// TestGroupRefusals: another org's token finds none of the org's groups
// (404 for every method); a member who is no user of the org, a group
// without displayName, a path ctalk cannot apply and a filter on another
// attribute are refused with SCIM's 400; a former member is left out.
func TestGroupRefusals(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		jane := e.provision("jane@acme.test")[0]
		e.ok("create", 201, "POST", "/Groups", `{"displayName":"Ops","members":[{"value":"`+jane+`"}]}`)
		apitest.Org(t, e.srv.URL, testkit.EraStateless, "other")
		other := e.newToken("other", "alice")
		for _, method := range []string{"GET", "PUT", "PATCH", "DELETE"} {
			body := ""
			switch method {
			case "PUT":
				body = `{"displayName":"Ops","members":[]}`
			case "PATCH":
				body = `{"Operations":[{"op":"remove","path":"members"}]}`
			}
			code, m, _ := call(t, e.srv.URL, other, method, "/Groups/ops", body)
			refusal(t, "another org's "+method, code, m, 404, "", "not found")
		}
		if code, m, _ := call(t, e.srv.URL, other, "POST", "/Users", `{"userName":"zed@other.test","active":true}`); code != 201 || m["id"] != "zed" {
			t.Fatalf("another org's user: %d %v", code, m)
		}
		if _, m, _ := call(t, e.srv.URL, other, "GET", "/Groups", ""); total(m) != 0 {
			t.Errorf("another org lists %v", m)
		}
		// A channel that is no group is not SCIM's.
		if _, err := e.srv.Channels.Create(dbtest.Operator(), ctalk.Caller{OrgID: "acme", UserID: "bob"}, channels.NewChannel{Name: "general"}); err != nil {
			t.Fatal(err)
		}
		code, m := e.do("PATCH", "/Groups/general", `{"Operations":[{"op":"add","path":"members","value":[{"value":"carol"}]}]}`)
		refusal(t, "a channel no group", code, m, 404, "", "not found")

		for _, tc := range []struct{ name, method, path, body, scimType, detail string }{
			{"an unknown member", "PATCH", "/Groups/ops", `{"Operations":[{"op":"add","path":"members","value":[{"value":"nobody"}]}]}`, "invalidValue", `"nobody" not found`},
			{"another org's member", "POST", "/Groups", `{"displayName":"X","members":[{"value":"zed"}]}`, "invalidValue", `"zed" not found`},
			{"a member without value", "PATCH", "/Groups/ops", `{"Operations":[{"op":"add","path":"members","value":[{"display":"x"}]}]}`, "invalidValue", "members must be"},
			{"no displayName", "POST", "/Groups", `{"members":[]}`, "invalidValue", "displayName"},
			{"a displayName removed", "PATCH", "/Groups/ops", `{"Operations":[{"op":"remove","path":"displayName"}]}`, "invalidValue", "displayName is required"},
			{"an add by filter", "PATCH", "/Groups/ops", `{"Operations":[{"op":"add","path":"members[value eq \"x\"]","value":[]}]}`, "invalidPath", "only removed"},
			{"a filter on members", "GET", "/Groups?filter=" + url.QueryEscape(`members eq "x"`), "", "invalidFilter", "displayName, externalId or id"},
			{"a bad op", "PATCH", "/Groups/ops", `{"Operations":[{"op":"move","path":"members"}]}`, "invalidSyntax", "not add, replace or remove"},
		} {
			code, m := e.do(tc.method, tc.path, tc.body)
			refusal(t, tc.name, code, m, 400, tc.scimType, tc.detail)
		}
		if got, _, _ := e.channelMembers("ops"); !slices.Equal(got, []string{jane}) {
			t.Errorf("a refused change changed the members: %v", got)
		}
		// The channel is the identity provider's: a member may not archive
		// it, and is told who keeps it.
		if _, err := e.srv.Channels.Archive(dbtest.Operator(), ctalk.Caller{OrgID: "acme", UserID: jane}, "ops"); ctalk.ErrorCode(err) != ctalk.EForbidden ||
			!strings.Contains(ctalk.ErrorMessage(err), "kept by the identity provider") {
			t.Errorf("a member archiving the group's channel: %v", err)
		}
		// A former member is left out rather than refused, as the IdP
		// may still list them.
		e.ok("deactivate", 200, "PATCH", "/Users/"+jane, `{"Operations":[{"op":"replace","path":"active","value":false}]}`)
		john := e.provision("john@acme.test")[0]
		m = e.ok("put with a former member", 200, "PUT", "/Groups/ops", `{"displayName":"Ops","members":[{"value":"`+jane+`"},{"value":"`+john+`"}]}`)
		if got := memberIDs(m); !slices.Equal(got, []string{john}) {
			t.Errorf("with a former member: %v", got)
		}
	})
}

// TestGroupPatchRace: two PATCHes adding members to one group at once
// both land, as Entra sends them for a group's members in batches.
func TestGroupPatchRace(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		ids := e.provision("a1@acme.test", "a2@acme.test", "b1@acme.test", "b2@acme.test")
		e.ok("create", 201, "POST", "/Groups", `{"displayName":"Race"}`)
		batches := [][]string{ids[:2], ids[2:]}
		codes := make([]int, len(batches))
		var wg sync.WaitGroup
		for i, batch := range batches {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i], _, _ = call(t, e.srv.URL, e.token, "PATCH", "/Groups/race",
					`{"Operations":[{"op":"Add","path":"members","value":[{"value":"`+batch[0]+`"},{"value":"`+batch[1]+`"}]}]}`)
			}()
		}
		wg.Wait()
		if codes[0] != 200 || codes[1] != 200 {
			t.Fatalf("the patches answered %v", codes)
		}
		want := slices.Clone(ids)
		sort.Strings(want)
		if got := memberIDs(e.ok("get", 200, "GET", "/Groups/race", "")); !slices.Equal(got, want) {
			t.Errorf("members %v, want %v", got, want)
		}
		if m := e.ok("get", 200, "GET", "/Groups/race", ""); m["meta"].(map[string]any)["version"] != `W/"3"` {
			t.Errorf("version %v after two patches, want W/\"3\"", m["meta"])
		}
	})
}

// TestETags: a User's and a Group's version is their ETag and
// meta.version, moved on by each change; a PUT, PATCH or DELETE whose
// If-Match names another version is refused with 412 and changes
// nothing; "*", the version in its strong form, or no If-Match pass.
func TestETags(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		if m := e.ok("ServiceProviderConfig", 200, "GET", "/ServiceProviderConfig", ""); m["etag"].(map[string]any)["supported"] != true {
			t.Errorf("etag not advertised: %v", m["etag"])
		}
		ifMatch := func(v string) http.Header { return http.Header{"If-Match": {v}} }
		version := func(what string, m map[string]any, resp *http.Response, want string) {
			t.Helper()
			if got := m["meta"].(map[string]any)["version"]; got != want || resp.Header.Get("ETag") != want {
				t.Errorf("%s: version %v, ETag %q, want %s", what, got, resp.Header.Get("ETag"), want)
			}
		}
		code, m, resp := callWith(t, e.srv.URL, e.token, "POST", "/Users", `{"userName":"jane@acme.test","active":true}`, nil)
		if code != 201 {
			t.Fatalf("create: %d %v", code, m)
		}
		version("created", m, resp, `W/"1"`)
		put := `{"userName":"jane@acme.test","displayName":"Jane Two","active":true}`
		_, m, resp = callWith(t, e.srv.URL, e.token, "PUT", "/Users/jane", put, ifMatch(`W/"1"`))
		version("a PUT of the version read", m, resp, `W/"2"`)
		code, m, _ = callWith(t, e.srv.URL, e.token, "PUT", "/Users/jane", `{"userName":"jane@acme.test","displayName":"Stale","active":true}`, ifMatch(`W/"1"`))
		refusal(t, "a PUT of a stale version", code, m, 412, "", `its version is W/"2"`)
		code, m, _ = callWith(t, e.srv.URL, e.token, "PATCH", "/Users/jane", `{"Operations":[{"op":"replace","path":"active","value":false}]}`, ifMatch(`W/"7", W/"1"`))
		refusal(t, "a PATCH of stale versions", code, m, 412, "", "changed since it was read")
		code, m, _ = callWith(t, e.srv.URL, e.token, "DELETE", "/Users/jane", "", ifMatch(`W/"1"`))
		refusal(t, "a DELETE of a stale version", code, m, 412, "", "read it again")
		if u, err := e.srv.Orgs.User(dbtest.Operator(), "acme", "jane"); err != nil || u.Name != "Jane Two" {
			t.Errorf("a refused write changed the member: %+v %v", u, err)
		}
		_, m, resp = callWith(t, e.srv.URL, e.token, "PATCH", "/Users/jane", `{"Operations":[{"op":"replace","path":"displayName","value":"Jane Three"}]}`, ifMatch(`"2"`))
		version("a PATCH of the strong form", m, resp, `W/"3"`)
		_, m, resp = callWith(t, e.srv.URL, e.token, "GET", "/Users/jane", "", nil)
		version("a read", m, resp, `W/"3"`)
		apitest.Org(t, e.srv.URL, testkit.EraStateless, "other")
		code, m, _ = callWith(t, e.srv.URL, e.newToken("other", "alice"), "DELETE", "/Users/jane", "", ifMatch(`W/"3"`))
		refusal(t, "another org's DELETE with If-Match", code, m, 404, "", "not found")

		code, m, resp = callWith(t, e.srv.URL, e.token, "POST", "/Groups", `{"displayName":"Ops","members":[{"value":"jane"}]}`, nil)
		if code != 201 {
			t.Fatalf("create a group: %d %v", code, m)
		}
		version("a group created", m, resp, `W/"1"`)
		add := `{"Operations":[{"op":"add","path":"members","value":[{"value":"bob"}]}]}`
		_, m, resp = callWith(t, e.srv.URL, e.token, "PATCH", "/Groups/ops", add, ifMatch(`W/"1"`))
		version("a group patched", m, resp, `W/"2"`)
		code, m, _ = callWith(t, e.srv.URL, e.token, "PATCH", "/Groups/ops", `{"Operations":[{"op":"remove","path":"members"}]}`, ifMatch(`W/"1"`))
		refusal(t, "a group's stale PATCH", code, m, 412, "", `its version is W/"2"`)
		code, m, _ = callWith(t, e.srv.URL, e.token, "PUT", "/Groups/ops", `{"displayName":"Ops","members":[]}`, ifMatch(`W/"1"`))
		refusal(t, "a group's stale PUT", code, m, 412, "", `its version is W/"2"`)
		code, m, _ = callWith(t, e.srv.URL, e.token, "DELETE", "/Groups/ops", "", ifMatch(`W/"1"`))
		refusal(t, "a group's stale DELETE", code, m, 412, "", `its version is W/"2"`)
		if got, _, archived := e.channelMembers("ops"); !slices.Equal(got, []string{"bob", "jane"}) || archived {
			t.Errorf("refused writes changed the group: %v, archived %v", got, archived)
		}
		if code, _, _ := callWith(t, e.srv.URL, e.token, "DELETE", "/Groups/ops", "", ifMatch("*")); code != 204 {
			t.Errorf("a DELETE with If-Match *: %d", code)
		}
	})
}
