package orgs_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
)

// member returns Member's answer for orgID/userID, read twice (the second
// read is served from the cache), failing the test on an error.
func member(t *testing.T, o *orgs.Service, orgID, userID string) (*orgs.User, *orgs.Org) {
	t.Helper()
	var u *orgs.User
	var org *orgs.Org
	for range 2 {
		var err error
		if u, org, err = o.Member(dbtest.Operator(), orgID, userID); err != nil {
			t.Fatalf("member %s/%s: %v", orgID, userID, err)
		}
	}
	return u, org
}

// TestMemberChangesIgnoreTheCache checks that every change of what Member
// returns shows on the very next call on the same replica, although the
// member was cached (for an hour here, so that only the change can end it),
// and that a change of one org leaves another's entries served.
func TestMemberChangesIgnoreTheCache(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		orgs.SetMemberCacheTTL(f.orgs, time.Hour)
		ctx := dbtest.Operator()
		member(t, f.orgs, "a", "bob")

		for _, c := range []struct {
			change string
			do     func() error
			want   func(u *orgs.User, o *orgs.Org) bool
		}{
			{"set_my_notes", func() error {
				_, err := f.orgs.SetNotes(ctx, ctalk.Caller{OrgID: "a", UserID: "bob"}, "new notes")
				return err
			},
				func(u *orgs.User, _ *orgs.Org) bool { return u.Notes == "new notes" }},
			{"set_user_profile", func() error { _, err := f.orgs.SetProfileNotes(ctx, "a", "bob", "admin notes"); return err },
				func(u *orgs.User, _ *orgs.Org) bool { return u.ProfileNotes == "admin notes" }},
			{"set_user_role", func() error { _, err := f.orgs.SetRole(ctx, "a", "bob", orgs.RoleAdmin); return err },
				func(u *orgs.User, _ *orgs.Org) bool { return u.Role == orgs.RoleAdmin }},
			{"approval_mode", func() error { _, err := f.orgs.SetApprovalMode(ctx, "a", orgs.ApprovalHuman); return err },
				func(_ *orgs.User, o *orgs.Org) bool { return o.ApprovalMode == orgs.ApprovalHuman }},
			{"channel_post_mode", func() error {
				_, err := f.orgs.SetSettings(ctx, "a", orgs.Settings{ChannelPostMode: orgs.ChannelPostHuman})
				return err
			}, func(_ *orgs.User, o *orgs.Org) bool { return o.ChannelPostMode == orgs.ChannelPostHuman }},
		} {
			member(t, f.orgs, "a", "bob")
			if err := c.do(); err != nil {
				t.Fatalf("%s: %v", c.change, err)
			}
			if u, o := member(t, f.orgs, "a", "bob"); !c.want(u, o) {
				t.Errorf("%s: the next Member still shows the old member or org: %+v, %+v", c.change, u, o)
			}
		}

		// Org b's member stays cached through org a's changes: a change
		// forgets only what it touched.
		member(t, f.orgs, "b", "dave")
		if err := d.Write(ctx, func(q db.Querier) error {
			_, err := q.Exec(ctx, `UPDATE users SET notes = 'behind the cache' WHERE org_id = 'b' AND id = 'dave'`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.orgs.SetNotes(ctx, ctalk.Caller{OrgID: "a", UserID: "bob"}, "again"); err != nil {
			t.Fatal(err)
		}
		if u, _ := member(t, f.orgs, "b", "dave"); u.Notes != "notes of dave" {
			t.Errorf("org b's member was read again after a change in org a: notes %q", u.Notes)
		}

		member(t, f.orgs, "a", "bob")
		if _, err := f.orgs.RemoveUser(ctx, "a", "bob"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.orgs.Member(ctx, "a", "bob"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("remove_user: Member of the removed member: %v; want not found", err)
		}
	})
}

// TestMemberCopiesAreTheCallers checks that a caller changing what Member
// returned does not change what the cache serves next.
func TestMemberCopiesAreTheCallers(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		ctx := dbtest.Operator()
		if _, err := f.orgs.AddUser(ctx, "a", orgs.NewUser{ID: "erin", Name: "Erin", Password: userPW, Ownership: []string{"billing"}}); err != nil {
			t.Fatal(err)
		}
		u, o := member(t, f.orgs, "a", "erin")
		u.Name, u.Ownership[0], o.Name = "changed", "changed", "changed"
		u, o = member(t, f.orgs, "a", "erin")
		if u.Name != "Erin" || !slices.Equal(u.Ownership, []string{"billing"}) || o.Name != "Org a" {
			t.Errorf("the cache serves what a caller changed: %+v, %+v", u, o)
		}
	})
}

// TestMemberReadDuringChangeIsNotCached checks that a read that began
// before a change committed, and finished after, does not leave the old
// member in the cache.
func TestMemberReadDuringChangeIsNotCached(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		orgs.SetMemberCacheTTL(f.orgs, time.Hour)
		read, resume := make(chan struct{}), make(chan struct{})
		var once sync.Once
		orgs.AfterMemberRead(f.orgs, func() {
			once.Do(func() {
				close(read)
				<-resume
			})
		})
		done := make(chan error)
		go func() {
			u, _, err := f.orgs.Member(dbtest.Operator(), "a", "bob")
			if err == nil && u.Notes != "notes of bob" {
				err = fmt.Errorf("notes %q; want the old ones, read before the change", u.Notes)
			}
			done <- err
		}()
		<-read
		if _, err := f.orgs.SetNotes(dbtest.Operator(), ctalk.Caller{OrgID: "a", UserID: "bob"}, "changed during the read"); err != nil {
			t.Fatal(err)
		}
		close(resume)
		if err := <-done; err != nil {
			t.Fatalf("the read that began before the change: %v", err)
		}
		if u, _ := member(t, f.orgs, "a", "bob"); u.Notes != "changed during the read" {
			t.Errorf("a read after the change shows notes %q; want the new ones", u.Notes)
		}
	})
}

// TestConcurrentMemberReadsDuringChanges checks, with concurrent callers of
// one member, that no read that begins after a change returned shows what
// was there before it.
func TestConcurrentMemberReadsDuringChanges(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		orgs.SetMemberCacheTTL(f.orgs, time.Hour)
		ctx := dbtest.Operator()
		// done is the number of changes that returned; a read that began
		// after n returned must show notes n or later.
		var (
			done  atomic.Int64
			reads atomic.Int64
			stop  atomic.Bool
			wg    sync.WaitGroup
		)
		if _, err := f.orgs.SetNotes(ctx, ctalk.Caller{OrgID: "a", UserID: "bob"}, "0"); err != nil {
			t.Fatal(err)
		}
		for range 8 {
			wg.Go(func() {
				for !stop.Load() {
					floor := done.Load()
					u, _, err := f.orgs.Member(ctx, "a", "bob")
					if err != nil {
						t.Error(err)
						return
					}
					var got int64
					fmt.Sscan(u.Notes, &got)
					if got < floor {
						t.Errorf("a read that began after change %d returned shows change %d", floor, got)
						return
					}
					reads.Add(1)
				}
			})
		}
		for i := int64(1); i <= 30; i++ {
			testkit.Poll(ctx, 10*time.Second, time.Millisecond, func() (bool, error) { return reads.Load() >= 10*i, nil })
			if _, err := f.orgs.SetNotes(ctx, ctalk.Caller{OrgID: "a", UserID: "bob"}, fmt.Sprint(i)); err != nil {
				t.Fatal(err)
			}
			done.Store(i)
		}
		stop.Store(true)
		wg.Wait()
	})
}

// memberReplicas opens two services on separate pools over one fresh
// database of engine e, as two replicas, with orgs a and b.
func memberReplicas(t *testing.T, e db.Engine) (o1, o2 *orgs.Service) {
	t.Helper()
	cfg := dbtest.Config(t, e)
	var services [2]*orgs.Service
	for i := range services {
		d, err := db.Open(dbtest.Operator(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		f := newFixture(t, d)
		if i == 0 {
			f.twoOrgs(t)
		}
		services[i] = f.orgs
	}
	return services[0], services[1]
}

// waitMember polls until o's Member of a/bob satisfies ok, for at most a
// generous deadline.
func waitMember(t *testing.T, o *orgs.Service, what string, ok func(*orgs.User, *orgs.Org) bool) {
	t.Helper()
	err := testkit.Poll(dbtest.Operator(), 15*time.Second, 10*time.Millisecond, func() (bool, error) {
		u, org, err := o.Member(dbtest.Operator(), "a", "bob")
		if err != nil {
			return false, err
		}
		return ok(u, org), nil
	})
	if err != nil {
		t.Fatalf("%s: the other replica still shows the old member or org (%v)", what, err)
	}
}

// TestMemberChangesReachOtherReplicas checks, on Postgres, that a change on
// one replica reaches another through its notification: the other
// replica's cache keeps entries for an hour here, so only the notification
// can refresh them.
func TestMemberChangesReachOtherReplicas(t *testing.T) {
	t.Parallel()
	o1, o2 := memberReplicas(t, db.Postgres)
	orgs.SetMemberCacheTTL(o2, time.Hour)
	ctx, cancel := context.WithCancel(dbtest.Operator())
	defer cancel()
	go o2.Listen(ctx, slog.Default())
	if err := testkit.Poll(ctx, 15*time.Second, 10*time.Millisecond, func() (bool, error) { return orgs.MemberListening(o2), nil }); err != nil {
		t.Fatal("the second replica never started listening")
	}

	member(t, o2, "a", "bob")
	if _, err := o1.SetNotes(ctx, ctalk.Caller{OrgID: "a", UserID: "bob"}, "from the other replica"); err != nil {
		t.Fatal(err)
	}
	waitMember(t, o2, "set_my_notes", func(u *orgs.User, _ *orgs.Org) bool { return u.Notes == "from the other replica" })

	member(t, o2, "a", "bob")
	if _, err := o1.SetApprovalMode(ctx, "a", orgs.ApprovalHuman); err != nil {
		t.Fatal(err)
	}
	waitMember(t, o2, "approval_mode", func(_ *orgs.User, o *orgs.Org) bool { return o.ApprovalMode == orgs.ApprovalHuman })

	member(t, o2, "a", "bob")
	if _, err := o1.RemoveUser(ctx, "a", "bob"); err != nil {
		t.Fatal(err)
	}
	err := testkit.Poll(ctx, 15*time.Second, 10*time.Millisecond, func() (bool, error) {
		_, _, err := o2.Member(ctx, "a", "bob")
		return ctalk.ErrorCode(err) == ctalk.ENotFound, nil
	})
	if err != nil {
		t.Fatal("remove_user: the other replica still serves the removed member")
	}
}

// TestLostMemberNoticeIsBounded checks that a replica that hears no changes
// (no listener: as if every notification were lost) still shows a change
// once its cache entry expires, within orgs.MemberCacheTTL.
func TestLostMemberNoticeIsBounded(t *testing.T) {
	t.Parallel()
	for _, e := range dbtest.Engines {
		t.Run(string(e), func(t *testing.T) {
			o1, o2 := memberReplicas(t, e)
			member(t, o2, "a", "bob")
			if _, err := o1.SetNotes(dbtest.Operator(), ctalk.Caller{OrgID: "a", UserID: "bob"}, "unannounced"); err != nil {
				t.Fatal(err)
			}
			waitMember(t, o2, "set_my_notes", func(u *orgs.User, _ *orgs.Org) bool { return u.Notes == "unannounced" })
		})
	}
}

// TestOnChangeHearsEveryChange checks that a function given to OnChange runs
// once each change of a member's shown data (notes, profile notes, removal)
// or of the org's settings has committed, with the member or the org, so
// that inbox's cached pages, which show senders, forget them.
func TestOnChangeHearsEveryChange(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		ctx := dbtest.Operator()
		var mu sync.Mutex
		var got []string
		f.orgs.OnChange(func(orgID, userID string) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, orgID+"/"+userID)
		})
		for _, c := range []struct {
			change string
			do     func() error
			want   string
		}{
			{"set_my_notes", func() error {
				_, err := f.orgs.SetNotes(ctx, ctalk.Caller{OrgID: "a", UserID: "bob"}, "new notes")
				return err
			}, "a/bob"},
			{"set_user_profile", func() error { _, err := f.orgs.SetProfileNotes(ctx, "a", "bob", "admin notes"); return err }, "a/bob"},
			{"approval_mode", func() error { _, err := f.orgs.SetApprovalMode(ctx, "a", orgs.ApprovalHuman); return err }, "a/"},
			{"remove_user", func() error { _, err := f.orgs.RemoveUser(ctx, "a", "bob"); return err }, "a/bob"},
		} {
			mu.Lock()
			got = nil
			mu.Unlock()
			if err := c.do(); err != nil {
				t.Fatalf("%s: %v", c.change, err)
			}
			mu.Lock()
			if !slices.Contains(got, c.want) {
				t.Errorf("%s: OnChange heard %v; want %s", c.change, got, c.want)
			}
			mu.Unlock()
		}
	})
}
