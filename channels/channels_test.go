package channels

import (
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/wait"
)

// People of the fixture: acme has an admin and two members, other has one.
var (
	alice   = ctalk.Caller{OrgID: "acme", UserID: "alice", Admin: true}
	bob     = ctalk.Caller{OrgID: "acme", UserID: "bob"}
	carol   = ctalk.Caller{OrgID: "acme", UserID: "carol"}
	mallory = ctalk.Caller{OrgID: "other", UserID: "mallory", Admin: true}
)

// fixture returns a service over d with the fixture's orgs and users.
func fixture(t testing.TB, d *db.DB) *Service {
	t.Helper()
	now := d.Now()
	for _, org := range []string{"acme", "other"} {
		if _, err := dbtest.Exec(d, `INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ($1, $1, 'x', $2)`, org, now); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []ctalk.Caller{alice, bob, carol, mallory} {
		role := "member"
		if c.Admin {
			role = "admin"
		}
		if _, err := dbtest.Exec(d, `INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ($1, $2, $3, 'x', $4, $5, $5)`,
			c.OrgID, c.UserID, "Name of "+c.UserID, role, now); err != nil {
			t.Fatal(err)
		}
	}
	return NewService(d, DefaultConfig(), wait.NewBroker())
}

// must returns v, and panics, failing the test, on an error: it keeps the
// happy path of a scenario one line per step.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func wantCode(t testing.TB, err error, want ctalk.Code) {
	t.Helper()
	if got := ctalk.ErrorCode(err); got != want {
		t.Fatalf("error %v: code %q, want %q", err, got, want)
	}
}

func names(chs []*Channel) []string {
	out := []string{}
	for _, c := range chs {
		out = append(out, c.Name)
	}
	return out
}

func TestChannelLifecycle(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)

		pub := must(s.Create(ctx, bob, NewChannel{Name: "#General", Topic: "all hands"}))
		if pub.Name != "general" || !pub.IsMember || pub.MemberCount != 1 || pub.CreatedBy != "bob" || pub.Private {
			t.Fatalf("created %+v", pub)
		}
		priv := must(s.Create(ctx, bob, NewChannel{Name: "secret", Private: true, Members: []string{"@Alice"}}))
		if priv.MemberCount != 2 {
			t.Fatalf("private channel has %d members, want bob and alice", priv.MemberCount)
		}
		_, err := s.Create(ctx, carol, NewChannel{Name: "general"})
		wantCode(t, err, ctalk.EConflict)
		_, err = s.Create(ctx, carol, NewChannel{Name: "bad name"})
		wantCode(t, err, ctalk.EInvalid)
		_, err = s.Create(ctx, carol, NewChannel{Name: "x", Members: []string{"mallory"}})
		wantCode(t, err, ctalk.ENotFound)
		if _, _, err := s.Get(ctx, carol, "x"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Fatalf("a refused create left channel x behind: %v", err)
		}

		if got := names(must(s.List(ctx, carol, false))); len(got) != 1 || got[0] != "general" {
			t.Fatalf("carol sees %v, want only general", got)
		}
		if got := names(must(s.List(ctx, alice, false))); len(got) != 2 {
			t.Fatalf("alice sees %v, want general and secret", got)
		}
		if got := must(s.List(ctx, mallory, true)); len(got) != 0 {
			t.Fatalf("another org sees %v", names(got))
		}

		_, err = s.Join(ctx, carol, "secret")
		wantCode(t, err, ctalk.ENotFound)
		j := must(s.Join(ctx, carol, "general"))
		if !j.IsMember || j.MemberCount != 2 {
			t.Fatalf("after join: %+v", j)
		}
		must(s.Join(ctx, carol, "general"))

		_, err = s.Update(ctx, carol, "general", ptr("mine now"), nil)
		wantCode(t, err, ctalk.EForbidden)
		u := must(s.Update(ctx, alice, "general", nil, ptr("Everyone")))
		if u.Topic != "all hands" || u.Description != "Everyone" {
			t.Fatalf("admin update: %+v", u)
		}
		u = must(s.Update(ctx, bob, "general", ptr("new topic"), nil))
		if u.Topic != "new topic" || u.Description != "Everyone" {
			t.Fatalf("creator update: %+v", u)
		}

		_, err = s.Invite(ctx, carol, "secret", []string{"carol"})
		wantCode(t, err, ctalk.ENotFound)
		_, err = s.Invite(ctx, carol, "general", []string{"nobody"})
		wantCode(t, err, ctalk.ENotFound)
		inv := must(s.Invite(ctx, alice, "secret", []string{"carol", "bob"}))
		if inv.MemberCount != 3 {
			t.Fatalf("after invite: %d members, want 3", inv.MemberCount)
		}
		_, members, err := s.Get(ctx, carol, "secret")
		if err != nil {
			t.Fatal(err)
		}
		if len(members) != 3 || members[0].UserID != "alice" || members[0].Name != "Name of alice" {
			t.Fatalf("members %+v", members)
		}

		l := must(s.Leave(ctx, carol, "secret"))
		if l.IsMember || l.MemberCount != 2 {
			t.Fatalf("after leave: %+v", l)
		}
		_, _, err = s.Get(ctx, carol, "secret")
		wantCode(t, err, ctalk.ENotFound)
		_, err = s.Leave(ctx, carol, "secret")
		wantCode(t, err, ctalk.ENotFound)

		_, err = s.Archive(ctx, carol, "general")
		wantCode(t, err, ctalk.EForbidden)
		a := must(s.Archive(ctx, bob, "general"))
		if !a.Archived || a.ArchivedAt == nil {
			t.Fatalf("archive: %+v", a)
		}
		must(s.Archive(ctx, alice, "general"))
		_, err = s.Post(ctx, carol, Post{Channel: "general", Text: "hello?"})
		wantCode(t, err, ctalk.EConflict)
		if got := names(must(s.List(ctx, carol, false))); len(got) != 0 {
			t.Fatalf("archived channel listed: %v", got)
		}
		if got := names(must(s.List(ctx, carol, true))); len(got) != 1 {
			t.Fatalf("include archived: %v", got)
		}
	})
}

func ptr(s string) *string { return &s }

// TestTenancy calls every operation on a channel of another org and on a
// private channel the caller is not in: each must be "not found", exactly as
// for a channel that does not exist.
func TestTenancy(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		must(s.Create(ctx, mallory, NewChannel{Name: "theirs"}))
		must(s.Post(ctx, mallory, Post{Channel: "theirs", Text: "their secret plans"}))
		must(s.Create(ctx, alice, NewChannel{Name: "hidden", Private: true}))
		must(s.Post(ctx, alice, Post{Channel: "hidden", Text: "hidden secret plans"}))
		after := int64(0)
		for _, name := range []string{"theirs", "hidden", "missing"} {
			ops := map[string]func() error{
				"get":      func() error { _, _, err := s.Get(ctx, carol, name); return err },
				"join":     func() error { _, err := s.Join(ctx, carol, name); return err },
				"leave":    func() error { _, err := s.Leave(ctx, carol, name); return err },
				"invite":   func() error { _, err := s.Invite(ctx, carol, name, []string{"bob"}); return err },
				"archive":  func() error { _, err := s.Archive(ctx, carol, name); return err },
				"update":   func() error { _, err := s.Update(ctx, carol, name, ptr("x"), nil); return err },
				"post":     func() error { _, err := s.Post(ctx, carol, Post{Channel: name, Text: "hi"}); return err },
				"messages": func() error { _, err := s.Messages(ctx, carol, name, Read{Limit: 10}); return err },
				"unread":   func() error { _, err := s.Unread(ctx, carol, name); return err },
				"wait":     func() error { _, err := s.Wait(ctx, carol, name, &after, wait.Options{}); return err },
				"search": func() error {
					_, err := s.Search(ctx, carol, Search{Query: "secret", Channel: name, Limit: 10})
					return err
				},
			}
			for op, fn := range ops {
				if err := fn(); ctalk.ErrorCode(err) != ctalk.ENotFound {
					t.Errorf("%s on %s: %v, want not found", op, name, err)
				}
			}
		}
		if got := must(s.Search(ctx, carol, Search{Query: "secret plans", Limit: 10})); len(got) != 0 {
			t.Fatalf("search found %d messages carol cannot read", len(got))
		}
	})
}
