package tools

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk"
)

// fuzzArgTypes makes a fresh argument struct for each tool, as addTool does.
var fuzzArgTypes = map[string]func() any{
	"register_organization":     func() any { return new(registerOrgArgs) },
	"register_user":             func() any { return new(registerUserArgs) },
	"login":                     func() any { return new(loginArgs) },
	"logout":                    func() any { return new(noArgs) },
	"whoami":                    func() any { return new(noArgs) },
	"list_users":                func() any { return new(noArgs) },
	"get_user_profile":          func() any { return new(profileArgs) },
	"update_my_notes":           func() any { return new(notesArgs) },
	"update_user_profile_notes": func() any { return new(profileNotesArgs) },
	"ask_person":                func() any { return new(askArgs) },
	"check_inbox":               func() any { return new(inboxArgs) },
	"propose_response":          func() any { return new(proposeArgs) },
	"decide_in_chat":            func() any { return new(cardArgs) },
	"send_response":             func() any { return new(sendArgs) },
	"check_replies":             func() any { return new(repliesArgs) },
	"decline_question":          func() any { return new(declineArgs) },
	"withdraw_question":         func() any { return new(withdrawArgs) },
	"wait_for_inbox":            func() any { return new(waitInboxArgs) },
	"wait_for_reply":            func() any { return new(waitReplyArgs) },
	"update_org_settings":       func() any { return new(orgSettingsArgs) },
	"get_audit_log":             func() any { return new(auditArgs) },
	"export_org":                func() any { return new(exportOrgArgs) },
	"get_notification_settings": func() any { return new(noArgs) },
	"invite_user":               func() any { return new(inviteUserArgs) },
	"remove_user":               func() any { return new(memberArgs) },
	"revoke_user_tokens":        func() any { return new(memberArgs) },
	"change_password":           func() any { return new(changePasswordArgs) },
	"reset_user_password":       func() any { return new(resetPasswordArgs) },
	"change_admin_password":     func() any { return new(changeAdminPasswordArgs) },
	"forward_question":          func() any { return new(forwardArgs) },
	"request_info":              func() any { return new(requestInfoArgs) },
	"provide_info":              func() any { return new(provideInfoArgs) },
	"find_answers":              func() any { return new(findAnswersArgs) },
	"find_expert":               func() any { return new(findExpertArgs) },
	"unshare_answer":            func() any { return new(unshareArgs) },
}

// fuzzTool is one registered tool: its name, arguments, required arguments
// and a maker of its argument struct.
type fuzzTool struct {
	name     string
	args     []string
	required []string
	newArgs  func() any
}

// registeredTools returns every tool the server registers, failing when one
// has no entry in fuzzArgTypes.
func registeredTools(tb testing.TB) []fuzzTool {
	tb.Helper()
	s := &Server{mcp: server.NewMCPServer("ctalk", "fuzz")}
	s.registerTools()
	var tools []fuzzTool
	for name, st := range s.mcp.ListTools() {
		newArgs, ok := fuzzArgTypes[name]
		if !ok {
			tb.Fatalf("tool %s has no argument struct in fuzzArgTypes; add it", name)
		}
		var args []string
		for arg := range st.Tool.InputSchema.Properties {
			args = append(args, arg)
		}
		sort.Strings(args)
		tools = append(tools, fuzzTool{name: name, args: args, required: st.Tool.InputSchema.Required, newArgs: newArgs})
	}
	return tools
}

// FuzzDecodeArgs checks that decoding any JSON into any tool's arguments
// never panics and either succeeds or says, as an invalid-argument error,
// what was wrong.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `"x"`, `1`, `true`, ` {} `, `{}{}`, `{} x`, `{`, `{"org_id":`, "\xff",
		`{"org_id":"acme","name":"Acme","admin_password":"correct horse battery"}`,
		`{"org_id":null,"name":null,"admin_password":null}`,
		`{"org_id":1,"name":true,"admin_password":[]}`,
		`{"org_id":{"nested":{"deeper":[1,2,{"x":null}]}}}`,
		`{"org_id":"acme","user_id":"bob","name":"Bob","password":"password1","ownership":["billing","infra"]}`,
		`{"org_id":"acme","user_id":"bob","name":"Bob","password":"password1","ownership":"billing, infra"}`,
		`{"org_id":"acme","user_id":"bob","name":"Bob","password":"password1","ownership":42}`,
		`{"org_id":"acme","user_id":"bob","name":"Bob","password":"password1","ownership":null}`,
		`{"org_id":"acme","user_id":"bob","name":"Bob","password":"password1","ownership":{"a":"b"}}`,
		`{"org_id":"acme","user_id":"bob","name":"Bob","password":"password1","ownership":[1,"x",null]}`,
		`{"org_id":"acme","user_id":"bob","name":"Bob","password":"password1","ownership":"","role":"admin"}`,
		`{"limit":5,"cursor":"abc"}`, `{"limit":1e400}`, `{"limit":-1e308}`, `{"limit":"5"}`,
		`{"limit":123456789012345678901234567890}`, `{"limit":0.5e-400}`, `{"limit":-0}`,
		`{"timeout_s":30}`, `{"timeout_s":1e309}`, `{"timeout_s":null}`, `{"timeout_s":"NaN"}`,
		`{"message_id":"q1","timeout_s":5}`, `{"message_id":123}`,
		`{"to_user_id":"bob","question":"Why?","idempotency_key":"k1"}`,
		`{"to_user_id":"bob","question":"Why?","unknown":1}`, `{"Question":"case"}`, `{"QUESTION":"x"}`,
		`{"auth_token":"ctalk_x"}`, `{"auth_token":7}`, `{"auth_token":null}`, `{"tokenArg":{}}`, `{"AuthToken":"x"}`,
		`{"message_id":"q1","draft_text":"yes","final_text":"yes","reason":"no"}`,
		`{"since":"2026-01-31T09:00:00Z"}`, `{"since":[]}`,
		`{"org_id":"acme","approval_mode":"human"}`, `{"approval_mode":false}`,
		`{"org_id":"acme","tool":"login","outcome":"ok","since":"2026-01-01T00:00:00Z","until":"x","limit":200}`,
		`{"notes":"` + strings.Repeat("n", 10001) + `"}`, `{"notes":"\ud800"}`, `{"notes":"\u0000"}`,
		`{"org_id":"a","org_id":"b"}`, `{"":1}`, `{"org_id":"a",}`,
		strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat(`}`, 10001),
		strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001),
	} {
		f.Add([]byte(s))
	}
	tools := registeredTools(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		// mcp-go hands over the arguments as raw JSON; in-process callers
		// may pass them already decoded.
		inputs := []any{json.RawMessage(raw)}
		var decoded any
		if json.Unmarshal(raw, &decoded) == nil {
			inputs = append(inputs, decoded)
		}
		if len(raw) == 0 {
			inputs = append(inputs, nil)
		}
		for _, tool := range tools {
			for _, in := range inputs {
				err := decodeArgs(in, tool.newArgs(), tool.required)
				if err == nil {
					continue
				}
				if code := ctalk.ErrorCode(err); code != ctalk.EInvalid || ctalk.ErrorMessage(err) == "" {
					t.Fatalf("%s: decodeArgs(%T %.200q) = %v (code %q), want %q with a message", tool.name, in, raw, err, code, ctalk.EInvalid)
				}
			}
		}
	})
}

// TestFuzzArgTypesCurrent keeps the fuzzed tool list in step with the
// server: every entry names a registered tool.
func TestFuzzArgTypesCurrent(t *testing.T) {
	registered := map[string]bool{}
	for _, tool := range registeredTools(t) {
		registered[tool.name] = true
	}
	for name := range fuzzArgTypes {
		if !registered[name] {
			t.Errorf("fuzzArgTypes has %s, which the server does not register", name)
		}
	}
}
