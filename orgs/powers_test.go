package orgs_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

// TestSettingsWeakening holds the table of weakening values: every value
// that takes oversight from people is named with its setting, and every
// stronger or kept value is not.
func TestSettingsWeakening(t *testing.T) {
	for _, tc := range []struct {
		in             orgs.Settings
		setting, value string
	}{
		{orgs.Settings{ApprovalMode: orgs.ApprovalAgent}, "approval_mode", orgs.ApprovalAgent},
		{orgs.Settings{ChannelPostMode: orgs.ChannelPostAgent}, "channel_post_mode", orgs.ChannelPostAgent},
		{orgs.Settings{AgentPasswordLogin: orgs.AgentLoginAllowed}, "agent_password_login", orgs.AgentLoginAllowed},
		{orgs.Settings{ApprovalMode: orgs.ApprovalHuman, ChannelPostMode: orgs.ChannelPostAgent}, "channel_post_mode", orgs.ChannelPostAgent},
		{orgs.Settings{ApprovalFactor: orgs.FactorSession}, "approval_factor", orgs.FactorSession},
		{orgs.Settings{KnowledgeSharing: orgs.SharingOn}, "knowledge_sharing", orgs.SharingOn},
		{orgs.Settings{RequirePasskey: ptr(false)}, "require_passkey", "false"},
		{orgs.Settings{ApprovalFactor: orgs.FactorPasskey, RequirePasskey: ptr(true), KnowledgeSharing: orgs.SharingAsk}, "", ""},
		{orgs.Settings{KnowledgeSharing: orgs.SharingOff}, "", ""},
		{orgs.Settings{ApprovalMode: orgs.ApprovalHuman}, "", ""},
		{orgs.Settings{ChannelPostMode: orgs.ChannelPostHuman, AgentPasswordLogin: orgs.AgentLoginDisabled}, "", ""},
		{orgs.Settings{}, "", ""},
	} {
		setting, value, ok := tc.in.Weakening()
		if setting != tc.setting || value != tc.value || ok != (tc.setting != "") {
			t.Errorf("%+v.Weakening() = %q, %q, %v; want %q, %q", tc.in, setting, value, ok, tc.setting, tc.value)
		}
	}
}

// TestSettingsAgainstTheOrg: a form that sends every setting weakens only
// what it changes; the weakening values the org holds are left out, and
// what remains still counts as a save.
func TestSettingsAgainstTheOrg(t *testing.T) {
	weak := orgs.Settings{ApprovalMode: orgs.ApprovalAgent, ChannelPostMode: orgs.ChannelPostAgent, AgentPasswordLogin: orgs.AgentLoginAllowed,
		ApprovalFactor: orgs.FactorSession, RequirePasskey: ptr(false), KnowledgeSharing: orgs.SharingOn}
	held := &orgs.Org{ApprovalMode: orgs.ApprovalAgent, ChannelPostMode: orgs.ChannelPostAgent, AgentPasswordLogin: orgs.AgentLoginAllowed,
		ApprovalFactor: orgs.FactorSession, Knowledge: &orgs.Knowledge{Sharing: orgs.SharingOn}}
	if setting, _, ok := weak.Against(held).Weakening(); ok {
		t.Errorf("weakening values the org holds count as a change of %s", setting)
	}
	strong := &orgs.Org{ApprovalMode: orgs.ApprovalHuman, ChannelPostMode: orgs.ChannelPostHuman, AgentPasswordLogin: orgs.AgentLoginDisabled,
		ApprovalFactor: orgs.FactorPasskey, RequirePasskey: true, Knowledge: &orgs.Knowledge{Sharing: orgs.SharingAsk}}
	if setting, value, ok := weak.Against(strong).Weakening(); !ok || setting != "approval_mode" || value != orgs.ApprovalAgent {
		t.Errorf("weakening a strong org: %q %q %v", setting, value, ok)
	}
	if !strong.AsksForPasskeys() || held.AsksForPasskeys() || !(&orgs.Org{RequirePasskey: true}).AsksForPasskeys() {
		t.Error("AsksForPasskeys is wrong")
	}
}

// TestWeakeningUnlessPasskeysAsked: a change let through because the org
// asked for no passkey does not land once it asks for one.
func TestWeakeningUnlessPasskeysAsked(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		f := newFixture(t, d)
		f.twoOrgs(t)
		if _, err := f.orgs.SetSettings(ctx, "a", orgs.Settings{ApprovalMode: orgs.ApprovalHuman, UnlessPasskeysAsked: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.orgs.SetSettings(ctx, "a", orgs.Settings{ApprovalFactor: orgs.FactorPasskey}); err != nil {
			t.Fatal(err)
		}
		_, err := f.orgs.SetSettings(ctx, "a", orgs.Settings{ApprovalMode: orgs.ApprovalAgent, UnlessPasskeysAsked: true})
		wantCode(t, err, ctalk.EConflict, "asks for passkeys")
		if o, _ := f.orgs.Org(ctx, "a"); o.ApprovalMode != orgs.ApprovalHuman {
			t.Errorf("approval_mode = %q after the refused change", o.ApprovalMode)
		}
		_, err = f.orgs.SetSettings(ctx, "nobody", orgs.Settings{ApprovalMode: orgs.ApprovalAgent, UnlessPasskeysAsked: true})
		wantCode(t, err, ctalk.ENotFound, "nobody")
	})
}

func ptr[T any](v T) *T { return &v }

// TestAgentPasswordLoginSetting checks the setting's default, both values,
// and a refusal of anything else that changes nothing.
func TestAgentPasswordLoginSetting(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		f := newFixture(t, d)
		f.twoOrgs(t)
		if o, err := f.orgs.Org(ctx, "a"); err != nil || o.AgentPasswordLogin != orgs.AgentLoginAllowed {
			t.Fatalf("a new org: %+v, %v; want agent_password_login allowed", o, err)
		}
		for _, v := range []string{orgs.AgentLoginDisabled, orgs.AgentLoginAllowed, orgs.AgentLoginDisabled} {
			o, err := f.orgs.SetSettings(ctx, "a", orgs.Settings{AgentPasswordLogin: v})
			if err != nil || o.AgentPasswordLogin != v || o.ApprovalMode != orgs.ApprovalAgent {
				t.Fatalf("SetSettings(agent_password_login %q) = %+v, %v", v, o, err)
			}
		}
		_, err := f.orgs.SetSettings(ctx, "a", orgs.Settings{AgentPasswordLogin: "sometimes"})
		wantCode(t, err, ctalk.EInvalid, `use "allowed" or "disabled"`)
		_, o, err := f.orgs.Member(ctx, "a", "bob")
		if err != nil || o.AgentPasswordLogin != orgs.AgentLoginDisabled {
			t.Fatalf("Member's org: %+v, %v; want agent_password_login disabled", o, err)
		}
		if o, err := f.orgs.Org(ctx, "b"); err != nil || o.AgentPasswordLogin != orgs.AgentLoginAllowed {
			t.Fatalf("setting org a changed org b: %+v, %v", o, err)
		}
	})
}

// TestAddUserAsAgentOnlyFirstAdmin checks that an agent adds members as
// before, and an admin only to an org that has none.
func TestAddUserAsAgentOnlyFirstAdmin(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		f := newFixture(t, d)
		if _, err := f.orgs.Register(ctx, orgs.NewOrg{ID: "new", Name: "New", AdminPassword: adminPW}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.orgs.AddUserAsAgent(ctx, "new", orgs.NewUser{ID: "m", Name: "M", Password: userPW}); err != nil {
			t.Fatalf("a member: %v", err)
		}
		if u, err := f.orgs.AddUserAsAgent(ctx, "new", orgs.NewUser{ID: "first", Name: "First", Password: userPW, Role: orgs.RoleAdmin}); err != nil || u.Role != orgs.RoleAdmin {
			t.Fatalf("the first admin: %+v, %v", u, err)
		}
		u, err := f.orgs.AddUserAsAgent(ctx, "new", orgs.NewUser{ID: "second", Name: "Second", Password: userPW, Role: orgs.RoleAdmin})
		if !errors.Is(err, orgs.ErrAdminExists) || u != nil {
			t.Fatalf("a second admin: %+v, %v; want ErrAdminExists", u, err)
		}
		wantCode(t, err, ctalk.EForbidden, "web app")
		if _, err := f.orgs.User(ctx, "new", "second"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Fatalf("the refused admin exists: %v", err)
		}
		_, err = f.orgs.AddUserAsAgent(ctx, "nobody", orgs.NewUser{ID: "x", Name: "X", Password: userPW, Role: orgs.RoleAdmin})
		wantCode(t, err, ctalk.ENotFound, "nobody")
	})
}

// TestFirstAdminsConcurrently has two agents add an admin to an org with
// none at the same moment, in many orgs: exactly one may be first.
func TestFirstAdminsConcurrently(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx := dbtest.Operator()
		for i := range 20 {
			org := fmt.Sprintf("org%d", i)
			if _, err := f.orgs.Register(ctx, orgs.NewOrg{ID: org, Name: org, AdminPassword: adminPW}); err != nil {
				t.Fatal(err)
			}
			start := make(chan struct{})
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for j, id := range []string{"ann", "ben"} {
				wg.Go(func() {
					<-start
					_, errs[j] = f.orgs.AddUserAsAgent(ctx, org, orgs.NewUser{ID: id, Name: id, Password: userPW, Role: orgs.RoleAdmin})
				})
			}
			close(start)
			wg.Wait()
			added := 0
			for _, err := range errs {
				switch {
				case err == nil:
					added++
				case errors.Is(err, orgs.ErrAdminExists):
				default:
					t.Fatalf("%s: %v", org, err)
				}
			}
			users, err := f.orgs.Users(ctx, org)
			if err != nil {
				t.Fatal(err)
			}
			if added != 1 || len(users) != 1 {
				t.Fatalf("%s: %d first admins added, members %v; want one", org, added, users)
			}
		}
	})
}
