package orgs_test

import (
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

const (
	adminPW = "correct horse battery"
	userPW  = "hunter22-long"
)

type fixture struct {
	d    *db.DB
	auth *auth.Service
	orgs *orgs.Service
}

func newFixture(t testing.TB, d *db.DB) *fixture {
	t.Helper()
	cfg := auth.DefaultConfig()
	cfg.BcryptCost = 4
	a, err := auth.NewService(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{d: d, auth: a, orgs: orgs.NewService(d, a)}
}

// twoOrgs registers orgs a and b, each with admin "alice", and members "bob"
// in a and "dave" in b.
func (f *fixture) twoOrgs(t testing.TB) {
	t.Helper()
	ctx := dbtest.Operator()
	for _, o := range []struct{ id, member string }{{"a", "bob"}, {"b", "dave"}} {
		if _, err := f.orgs.Register(ctx, orgs.NewOrg{ID: o.id, Name: "Org " + o.id, AdminPassword: adminPW}); err != nil {
			t.Fatal(err)
		}
		for _, u := range []orgs.NewUser{
			{ID: "alice", Name: "Alice of " + o.id, Password: userPW, Role: orgs.RoleAdmin},
			{ID: o.member, Name: o.member, Password: userPW, Notes: "notes of " + o.member},
		} {
			if _, err := f.orgs.AddUser(ctx, o.id, u); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func (f *fixture) session(t *testing.T, orgID, userID string) *auth.Session {
	t.Helper()
	_, sess, err := f.auth.Login(dbtest.Operator(), orgID, userID, userPW, "")
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

func wantCode(t *testing.T, err error, code ctalk.Code, want string) {
	t.Helper()
	if got := ctalk.ErrorCode(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
	if !strings.Contains(ctalk.ErrorMessage(err), want) {
		t.Fatalf("error message %q does not contain %q", ctalk.ErrorMessage(err), want)
	}
}

const idRule = "a-z, 0-9, '-' or '_'"

func TestRegister(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx := dbtest.Operator()
		org, err := f.orgs.Register(ctx, orgs.NewOrg{ID: "  Acme_Corp-1 ", Name: "  Acme  ", AdminPassword: strings.Repeat("a", 12)})
		if err != nil {
			t.Fatal(err)
		}
		if org.ID != "acme_corp-1" || org.Name != "Acme" || org.ApprovalMode == "" || org.CreatedAt.IsZero() {
			t.Errorf("org = %+v", org)
		}
		var hash string
		if err := d.QueryRow(dbtest.Operator(), `SELECT admin_password_hash FROM orgs WHERE id = $1`, "acme_corp-1").Scan(&hash); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(hash, "$2") {
			t.Errorf("admin password stored as %q, want a bcrypt hash", hash)
		}
		_, err = f.orgs.Register(ctx, orgs.NewOrg{ID: "ACME_CORP-1", Name: "Again", AdminPassword: adminPW})
		wantCode(t, err, ctalk.EConflict, `"acme_corp-1" is taken`)

		for _, tc := range []struct {
			name string
			in   orgs.NewOrg
			want string
		}{
			{"empty id", orgs.NewOrg{ID: "  ", Name: "X", AdminPassword: adminPW}, "org_id is required"},
			{"id with a space", orgs.NewOrg{ID: "my org", Name: "X", AdminPassword: adminPW}, idRule},
			{"id with a dot", orgs.NewOrg{ID: "my.org", Name: "X", AdminPassword: adminPW}, idRule},
			{"id with a slash", orgs.NewOrg{ID: "../etc", Name: "X", AdminPassword: adminPW}, idRule},
			{"id with accents", orgs.NewOrg{ID: "café", Name: "X", AdminPassword: adminPW}, idRule},
			{"id with a NUL", orgs.NewOrg{ID: "a\x00b", Name: "X", AdminPassword: adminPW}, idRule},
			{"id of 65", orgs.NewOrg{ID: strings.Repeat("a", 65), Name: "X", AdminPassword: adminPW}, "65 characters long; use 1 to 64"},
			{"id of 100 KB", orgs.NewOrg{ID: strings.Repeat("a", 100<<10), Name: "X", AdminPassword: adminPW}, "use 1 to 64"},
			{"no name", orgs.NewOrg{ID: "x", Name: " ", AdminPassword: adminPW}, "name is required"},
			{"name of 201", orgs.NewOrg{ID: "x", Name: strings.Repeat("n", 201), AdminPassword: adminPW}, "at most 200"},
			{"name of two lines", orgs.NewOrg{ID: "x", Name: "Acme\r\nReset your password: https://evil.test", AdminPassword: adminPW}, "name contains a line break (U+000D); a name is one line of text"},
			{"admin password of 11", orgs.NewOrg{ID: "x", Name: "X", AdminPassword: strings.Repeat("a", 11)}, "admin_password must be at least 12 characters"},
			{"admin password of 73 bytes", orgs.NewOrg{ID: "x", Name: "X", AdminPassword: strings.Repeat("a", 73)}, "admin_password is 73 bytes; at most 72"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := f.orgs.Register(ctx, tc.in)
				wantCode(t, err, ctalk.EInvalid, tc.want)
			})
		}
		if _, err := f.orgs.Register(ctx, orgs.NewOrg{ID: strings.Repeat("z", 64), Name: "Long", AdminPassword: adminPW}); err != nil {
			t.Errorf("64-character id refused: %v", err)
		}
		var n int
		d.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM orgs`).Scan(&n)
		if n != 2 {
			t.Errorf("%d orgs stored, want 2", n)
		}
	})
}

func TestAddUser(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		ctx := dbtest.Operator()
		u, err := f.orgs.AddUser(ctx, "a", orgs.NewUser{ID: " Umar ", Name: " Umar ", Password: strings.Repeat("p", 8), Ownership: []string{" alpha ", "", "beta"}, Notes: " backend "})
		if err != nil {
			t.Fatal(err)
		}
		if u.ID != "umar" || u.Name != "Umar" || u.Role != orgs.RoleMember || strings.Join(u.Ownership, "|") != "alpha|beta" || u.Notes != "backend" {
			t.Errorf("user = %+v", u)
		}
		var hash string
		if err := d.QueryRow(dbtest.Operator(), `SELECT password_hash FROM users WHERE org_id = 'a' AND id = 'umar'`).Scan(&hash); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(hash, "$2") || strings.Contains(hash, strings.Repeat("p", 8)) {
			t.Errorf("password stored as %q, want a bcrypt hash", hash)
		}
		_, err = f.orgs.AddUser(ctx, "a", orgs.NewUser{ID: "UMAR", Name: "Again", Password: userPW})
		wantCode(t, err, ctalk.EConflict, "taken")
		// The same id in another org is another person.
		if _, err := f.orgs.AddUser(ctx, "b", orgs.NewUser{ID: "umar", Name: "Other Umar", Password: userPW}); err != nil {
			t.Errorf("same user id in another org: %v", err)
		}
		_, err = f.orgs.AddUser(ctx, "nosuch", orgs.NewUser{ID: "x", Name: "X", Password: userPW})
		wantCode(t, err, ctalk.ENotFound, "not found")

		many := make([]string, orgs.MaxOwnership+1)
		for i := range many {
			many[i] = "area"
		}
		for _, tc := range []struct {
			name string
			in   orgs.NewUser
			want string
		}{
			{"bad id", orgs.NewUser{ID: "bob smith", Name: "X", Password: userPW}, idRule},
			{"no name", orgs.NewUser{ID: "x", Password: userPW}, "name is required"},
			{"bad role", orgs.NewUser{ID: "x", Name: "X", Password: userPW, Role: "owner"}, `role "owner" is not valid`},
			{"password of 7", orgs.NewUser{ID: "x", Name: "X", Password: "1234567"}, "password must be at least 8 characters"},
			{"password of 73 bytes", orgs.NewUser{ID: "x", Name: "X", Password: strings.Repeat("p", 73)}, "password is 73 bytes; at most 72"},
			{"password of 100 KB", orgs.NewUser{ID: "x", Name: "X", Password: strings.Repeat("p", 100<<10)}, "at most 72"},
			{"too many areas", orgs.NewUser{ID: "x", Name: "X", Password: userPW, Ownership: many}, "at most 50"},
			{"area too long", orgs.NewUser{ID: "x", Name: "X", Password: userPW, Ownership: []string{strings.Repeat("o", 201)}}, "at most 200"},
			{"notes of 100 KB", orgs.NewUser{ID: "x", Name: "X", Password: userPW, Notes: strings.Repeat("n", 100<<10)}, "notes is 102400 characters; at most 10000"},
			{"notes with NUL", orgs.NewUser{ID: "x", Name: "X", Password: userPW, Notes: "a\x00b"}, "NUL"},
			{"notes not UTF-8", orgs.NewUser{ID: "x", Name: "X", Password: userPW, Notes: "a\xffb"}, "not valid UTF-8"},
			{"name with NUL", orgs.NewUser{ID: "x", Name: "X\x00", Password: userPW}, "NUL"},
			{"name of two lines", orgs.NewUser{ID: "x", Name: "Mal\nReset your password", Password: userPW}, "name contains a line break (U+000A)"},
			{"name with a line separator", orgs.NewUser{ID: "x", Name: "Mal\u2028Reset", Password: userPW}, "name contains a line break (U+2028)"},
			{"name with a tab", orgs.NewUser{ID: "x", Name: "Mal\tX", Password: userPW}, "name contains a tab"},
			{"name with an escape", orgs.NewUser{ID: "x", Name: "Mal\x1b[2J", Password: userPW}, "name contains a control character (U+001B)"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := f.orgs.AddUser(ctx, "a", tc.in)
				wantCode(t, err, ctalk.EInvalid, tc.want)
			})
		}
		// Errors quote input, but never much of it.
		_, err = f.orgs.AddUser(ctx, "a", orgs.NewUser{ID: "x", Name: "X", Password: userPW, Role: strings.Repeat("r", 100<<10)})
		wantCode(t, err, ctalk.EInvalid, "is not valid; use \"member\" or \"admin\"")
		if n := len(ctalk.ErrorMessage(err)); n > 200 {
			t.Errorf("the role error is %d bytes long: it echoes the input", n)
		}
		if _, err := f.orgs.User(ctx, "a", "x"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("a refused user was stored: %v", err)
		}
	})
}

func TestAuthorizeAdmin(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		ctx := dbtest.Operator()
		adminA, memberA := f.session(t, "a", "alice"), f.session(t, "a", "bob")

		for _, tc := range []struct {
			name     string
			sess     *auth.Session
			org, pw  string
			code     ctalk.Code
			want     string
			authorOf string
		}{
			{name: "admin token", sess: adminA, org: "a", authorOf: "a"},
			{name: "admin token, id in capitals", sess: adminA, org: " A ", authorOf: "a"},
			{name: "admin password", org: "b", pw: adminPW, authorOf: "b"},
			{name: "member token with the admin password", sess: memberA, org: "a", pw: adminPW, authorOf: "a"},
			{name: "member token", sess: memberA, org: "a", code: ctalk.EForbidden, want: "only org admins"},
			{name: "nothing", org: "a", code: ctalk.EUnauthorized, want: "admin_password"},
			{name: "wrong password", org: "a", pw: "not the admin password", code: ctalk.EUnauthorized, want: "wrong"},
			{name: "unknown org", org: "nosuch", pw: adminPW, code: ctalk.ENotFound, want: "not found"},
			{name: "bad org id", org: "a b", pw: adminPW, code: ctalk.EInvalid, want: idRule},
			// Another org's token makes the org unknown, whatever else is offered.
			{name: "admin token of another org", sess: adminA, org: "b", code: ctalk.ENotFound, want: `"b" not found`},
			{name: "admin token of another org with its password", sess: adminA, org: "b", pw: adminPW, code: ctalk.ENotFound, want: `"b" not found`},
			{name: "member token of another org with its password", sess: memberA, org: "b", pw: adminPW, code: ctalk.ENotFound, want: `"b" not found`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := f.orgs.AuthorizeAdmin(ctx, tc.sess, tc.org, tc.pw)
				if tc.code == "" {
					if err != nil || got != tc.authorOf {
						t.Fatalf("AuthorizeAdmin = %q, %v; want %q", got, err, tc.authorOf)
					}
					return
				}
				wantCode(t, err, tc.code, tc.want)
				if got != "" {
					t.Errorf("refused, yet returned org %q", got)
				}
			})
		}
	})
}

func TestUsersAreScopedToTheirOrg(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		ctx := dbtest.Operator()

		users, err := f.orgs.Users(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, u := range users {
			ids = append(ids, u.OrgID+"/"+u.ID)
		}
		if got := strings.Join(ids, " "); got != "a/alice a/bob" {
			t.Errorf("Users(a) = %s, want a/alice a/bob", got)
		}
		u, err := f.orgs.User(ctx, "a", " ALICE ")
		if err != nil || u.OrgID != "a" || u.Name != "Alice of a" {
			t.Errorf("User(a, alice) = %+v, %v", u, err)
		}
		_, err = f.orgs.User(ctx, "a", "dave")
		wantCode(t, err, ctalk.ENotFound, `user "dave" not found in your organization`)
		_, err = f.orgs.User(ctx, "a", "dave/../x")
		wantCode(t, err, ctalk.EInvalid, idRule)

		// Member reads the user and the org together, within the org only.
		m, org, err := f.orgs.Member(ctx, "b", "alice")
		if err != nil || m.OrgID != "b" || m.ID != "alice" || m.Name != "Alice of b" || org.ID != "b" || org.Name == "" {
			t.Errorf("Member(b, alice) = %+v, %+v, %v", m, org, err)
		}
		_, _, err = f.orgs.Member(ctx, "a", "dave")
		wantCode(t, err, ctalk.ENotFound, `user "dave" not found in your organization`)

		_, err = f.orgs.SetNotes(ctx, ctalk.Caller{OrgID: "a", UserID: "dave"}, "overwritten")
		wantCode(t, err, ctalk.ENotFound, "not found")
		_, err = f.orgs.SetProfileNotes(ctx, "a", "dave", "overwritten")
		wantCode(t, err, ctalk.ENotFound, "not found")
		dave, err := f.orgs.User(ctx, "b", "dave")
		if err != nil || dave.Notes != "notes of dave" || dave.ProfileNotes != "" {
			t.Errorf("dave of b was changed through org a: %+v, %v", dave, err)
		}
		// Alice of a writing her notes leaves alice of b alone.
		if _, err := f.orgs.SetNotes(ctx, ctalk.Caller{OrgID: "a", UserID: "alice"}, "mine"); err != nil {
			t.Fatal(err)
		}
		if alice, _ := f.orgs.User(ctx, "b", "alice"); alice.Notes != "" {
			t.Errorf("alice of b has notes %q written by alice of a", alice.Notes)
		}
	})
}

func TestNotes(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		f.twoOrgs(t)
		ctx := dbtest.Operator()
		u, err := f.orgs.SetNotes(ctx, ctalk.Caller{OrgID: "a", UserID: "bob"}, "  I own the retry logic  ")
		if err != nil || u.Notes != "I own the retry logic" {
			t.Fatalf("SetNotes = %+v, %v", u, err)
		}
		u, err = f.orgs.SetProfileNotes(ctx, "a", "bob", "on call")
		if err != nil || u.ProfileNotes != "on call" || u.Notes != "I own the retry logic" {
			t.Fatalf("SetProfileNotes = %+v, %v", u, err)
		}
		full := strings.Repeat("é", orgs.MaxNotesLen)
		if _, err := f.orgs.SetNotes(ctx, ctalk.Caller{OrgID: "a", UserID: "bob"}, full); err != nil {
			t.Errorf("notes of exactly %d characters refused: %v", orgs.MaxNotesLen, err)
		}
		_, err = f.orgs.SetNotes(ctx, ctalk.Caller{OrgID: "a", UserID: "bob"}, full+"é")
		wantCode(t, err, ctalk.EInvalid, "at most 10000")
		_, err = f.orgs.SetProfileNotes(ctx, "a", "bob", strings.Repeat("x", 100<<10))
		wantCode(t, err, ctalk.EInvalid, "profile_notes is 102400 characters")
		_, err = f.orgs.SetNotes(ctx, ctalk.Caller{OrgID: "a", UserID: "bob"}, "\xc3")
		wantCode(t, err, ctalk.EInvalid, "UTF-8")
		u, err = f.orgs.User(ctx, "a", "bob")
		if err != nil || u.Notes != full {
			t.Errorf("a refused update changed the notes")
		}
		if _, err := f.orgs.SetNotes(ctx, ctalk.Caller{OrgID: "a", UserID: "bob"}, ""); err != nil {
			t.Errorf("clearing notes: %v", err)
		}
	})
}
