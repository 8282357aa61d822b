package sso_test

import (
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/outbound"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/sso"
)

const (
	base     = "http://127.0.0.1:9"
	redirect = base + sso.CallbackPath
)

// fixture is an org acme with the admin alice, its provider op, and the
// DNS server its domains are proven at.
type fixture struct {
	svc  *sso.Service
	orgs *orgs.Service
	op   *testkit.OpenIDProvider
	dns  *testkit.DNSServer
}

var alice = ctalk.Caller{OrgID: "acme", UserID: "alice", Admin: true}

// setUp makes acme with op as its provider, set to s, and the domains
// given, verified.
func setUp(t *testing.T, d *db.DB, s sso.Settings, domains ...string) *fixture {
	t.Helper()
	ctx := dbtest.Operator()
	cfg := auth.DefaultConfig()
	cfg.BcryptCost = 4
	a, err := auth.NewService(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := orgs.NewService(d, a)
	if _, _, err := o.RegisterWithAdmin(ctx, orgs.NewOrg{ID: "acme", Name: "Acme", AdminPassword: "admin-password-1"},
		orgs.NewUser{ID: "alice", Name: "Alice", Password: "alice-password-1", Role: orgs.RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{orgs: o, op: testkit.NewOpenIDProvider(t, "ctalk-acme", "secret-0123456789"), dns: testkit.NewDNSServer(t)}
	f.svc = sso.New(d, sso.Config{HTTP: outbound.Client(outbound.Options{AllowLoopback: true}), AllowHTTP: true, Resolver: f.dns.Resolver()}, o)
	s.Issuer, s.ClientID, s.ClientSecret = f.op.URL, f.op.ClientID, f.op.ClientSecret
	if _, err := f.svc.Configure(ctx, alice, s); err != nil {
		t.Fatal(err)
	}
	for _, name := range domains {
		f.prove(t, alice, name)
	}
	return f
}

// prove adds name to c's org, publishes its record and verifies it.
func (f *fixture) prove(t *testing.T, c ctalk.Caller, name string) *sso.Domain {
	t.Helper()
	ctx := dbtest.Operator()
	dom, err := f.svc.AddDomain(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	f.dns.SetTXT(dom.RecordName(), dom.RecordValue())
	if dom, err = f.svc.VerifyDomain(ctx, c, dom.ID); err != nil || !dom.Verified() {
		t.Fatalf("verifying %s: %+v, %v", name, dom, err)
	}
	return dom
}

// code begins a sign-in at acme's provider and returns its state and the
// code the provider sends back.
func (f *fixture) code(t *testing.T) (state, code string) {
	t.Helper()
	st, err := f.svc.Begin(dbtest.Operator(), "acme", sso.PurposeSignIn, "", "/inbox", base)
	if err != nil {
		t.Fatal(err)
	}
	h := outbound.Client(outbound.Options{AllowLoopback: true})
	resp, err := h.Get(st.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc.Query().Get("state") != st.State {
		t.Fatalf("the provider answered %d, %s", resp.StatusCode, loc)
	}
	return st.State, loc.Query().Get("code")
}

// TestJITRacingSignIns: eight first sign-ins of the same new person at once
// make one member, and both sign in as it; a second person with the same
// address, at once or later, is linked to nobody.
func TestJITRacingSignIns(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		f := setUp(t, d, sso.Settings{JIT: true}, "acme.test")
		f.op.SetUser(testkit.OIDCUser{Subject: "idp-dave", Email: "dave@acme.test", EmailVerified: true, Name: "Dave"})
		const n = 8
		var states, codes [n]string
		for i := range n {
			states[i], codes[i] = f.code(t)
		}
		var (
			wg   sync.WaitGroup
			res  [n]*sso.Result
			errs [n]error
		)
		for i := range n {
			wg.Go(func() { res[i], errs[i] = f.svc.Finish(ctx, states[i], codes[i], redirect) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil || res[i].UserID != "dave" {
				t.Fatalf("sign-in %d: %+v, %v", i, res[i], errs[i])
			}
		}
		users, err := f.orgs.Users(ctx, "acme")
		if err != nil || len(users) != 2 {
			t.Fatalf("members after racing first sign-ins: %d, %v; want alice and dave", len(users), err)
		}
		// Someone else at the provider with dave's address: nobody.
		f.op.SetUser(testkit.OIDCUser{Subject: "idp-mallory", Email: "dave@acme.test", EmailVerified: true})
		state, code := f.code(t)
		if _, err := f.svc.Finish(ctx, state, code, redirect); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("another subject with dave's address: %v, want not found", err)
		}
	})
}

// TestFinishTakesItsStateOnce: a state is taken once, even by two
// callbacks at the same time.
func TestFinishTakesItsStateOnce(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		f := setUp(t, d, sso.Settings{LinkByEmail: true}, "acme.test")
		if _, err := f.orgs.SetEmail(ctx, "acme", "alice", "alice@acme.test"); err != nil {
			t.Fatal(err)
		}
		f.op.SetUser(testkit.OIDCUser{Subject: "idp-alice", Email: "alice@acme.test", EmailVerified: true})
		state, code := f.code(t)
		var (
			wg sync.WaitGroup
			mu sync.Mutex
			ok int
		)
		for range 4 {
			wg.Go(func() {
				if _, err := f.svc.Finish(ctx, state, code, redirect); err == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				} else if ctalk.ErrorCode(err) != ctalk.EUnauthorized {
					t.Errorf("a callback with a used state: %v, want unauthorized", err)
				}
			})
		}
		wg.Wait()
		if ok != 1 {
			t.Errorf("%d callbacks of one state signed in, want 1", ok)
		}
	})
}

// TestRequiredAfterATestOnly: sso_required needs a test login of the
// settings as they are; changing the client id undoes it and turns it
// off; the gate then lets passwords in again.
func TestRequiredAfterATestOnly(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		f := setUp(t, d, sso.Settings{})
		if err := f.svc.SetRequired(ctx, alice, true); ctalk.ErrorCode(err) != ctalk.EConflict {
			t.Fatalf("requiring before a test: %v", err)
		}
		f.op.SetUser(testkit.OIDCUser{Subject: "idp-alice"})
		st, err := f.svc.Begin(ctx, "acme", sso.PurposeTest, "alice", "/admin/sso", base)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := outbound.Client(outbound.Options{AllowLoopback: true}).Get(st.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if res, err := f.svc.Finish(ctx, st.State, loc.Query().Get("code"), redirect); err != nil || res.Linked != sso.LinkedTest {
			t.Fatalf("the test login: %+v, %v", res, err)
		}
		if err := f.svc.SetRequired(ctx, alice, true); err != nil {
			t.Fatal(err)
		}
		if err := f.svc.Gate(ctx, "acme", "alice", auth.DoorMCP); ctalk.ErrorCode(err) != ctalk.EForbidden {
			t.Errorf("the MCP door under sso_required: %v", err)
		}
		if err := f.svc.SetRequired(ctx, ctalk.Caller{OrgID: "acme", UserID: "bob"}, false); ctalk.ErrorCode(err) != ctalk.EForbidden {
			t.Errorf("a member turning it off: %v", err)
		}
		if _, err := f.svc.Configure(ctx, alice, sso.Settings{Issuer: f.op.URL, ClientID: "another-client"}); err != nil {
			t.Fatal(err)
		}
		p, err := f.svc.Provider(ctx, alice)
		if err != nil || p.Required || p.Tested() {
			t.Fatalf("after a new client id: required %v, tested %v (%v)", p.Required, p.Tested(), err)
		}
		if err := f.svc.Gate(ctx, "acme", "alice", auth.DoorMCP); err != nil {
			t.Errorf("the MCP door once no longer required: %v", err)
		}
	})
}
