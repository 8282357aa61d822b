package sso_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/sso"
)

// addOrg registers another org with its admin alice.
func addOrg(t *testing.T, f *fixture, id string) ctalk.Caller {
	t.Helper()
	if _, _, err := f.orgs.RegisterWithAdmin(dbtest.Operator(), orgs.NewOrg{ID: id, Name: id, AdminPassword: "admin-password-1"},
		orgs.NewUser{ID: "alice", Name: "Alice", Password: "alice-password-1", Role: orgs.RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	return ctalk.Caller{OrgID: id, UserID: "alice", Admin: true}
}

// TestDomainProvenByDNS: a domain added is pending, and neither routes a
// sign-in by email nor vouches for an address until its TXT record is
// found at _ctalk.DOMAIN (missing, or with another value: refused, saying
// what to publish); verified, it does both. Another org cannot add or
// verify it, nor see, verify or remove the first org's domain (not found).
func TestDomainProvenByDNS(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		f := setUp(t, d, sso.Settings{JIT: true})
		beta := addOrg(t, f, "beta")

		for _, bad := range []string{"", "not a domain", "localhost", "a@b@c"} {
			if _, err := f.svc.AddDomain(ctx, alice, bad); ctalk.ErrorCode(err) != ctalk.EInvalid {
				t.Errorf("adding %q: %v, want invalid", bad, err)
			}
		}
		if _, err := f.svc.AddDomain(ctx, ctalk.Caller{OrgID: "acme", UserID: "bob"}, "acme.test"); ctalk.ErrorCode(err) != ctalk.EForbidden {
			t.Errorf("a member adding a domain: %v", err)
		}
		dom, err := f.svc.AddDomain(ctx, alice, " @ACME.test. ")
		if err != nil || dom.Name != "acme.test" || dom.Verified() || dom.RecordName() != "_ctalk.acme.test" || !strings.HasPrefix(dom.RecordValue(), "ctalk-verification=") {
			t.Fatalf("added: %+v, %v", dom, err)
		}
		if _, err := f.svc.AddDomain(ctx, alice, "acme.test"); ctalk.ErrorCode(err) != ctalk.EConflict {
			t.Errorf("adding it twice: %v", err)
		}
		// Pending: no routing, no trust.
		if _, err := f.svc.OrgByDomain(ctx, "dave@acme.test"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("a pending domain routed a sign-in: %v", err)
		}
		f.op.SetUser(testkit.OIDCUser{Subject: "idp-dave", Email: "dave@acme.test", EmailVerified: true, Name: "Dave"})
		state, code := f.code(t)
		if _, err := f.svc.Finish(ctx, state, code, redirect); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("an address at a pending domain made a member just in time: %v", err)
		}

		if _, err := f.svc.VerifyDomain(ctx, alice, dom.ID); ctalk.ErrorCode(err) != ctalk.EInvalid || !strings.Contains(err.Error(), dom.RecordValue()) {
			t.Errorf("verifying without a record: %v", err)
		}
		f.dns.SetTXT(dom.RecordName(), "v=spf1 -all", "ctalk-verification=someone-elses")
		if _, err := f.svc.VerifyDomain(ctx, alice, dom.ID); ctalk.ErrorCode(err) != ctalk.EInvalid || !strings.Contains(err.Error(), "do not hold") {
			t.Errorf("verifying with another value: %v", err)
		}
		// beta lists it too, and cannot verify it with acme's record; nor
		// reach acme's domain by its id.
		betaDom, err := f.svc.AddDomain(ctx, beta, "acme.test")
		if err != nil {
			t.Fatalf("another org adding a pending domain: %v", err)
		}
		f.dns.SetTXT(dom.RecordName(), "v=spf1 -all", dom.RecordValue())
		if _, err := f.svc.VerifyDomain(ctx, beta, betaDom.ID); ctalk.ErrorCode(err) != ctalk.EInvalid {
			t.Errorf("beta verifying with acme's record: %v", err)
		}
		if _, err := f.svc.VerifyDomain(ctx, beta, dom.ID); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("beta verifying acme's domain: %v", err)
		}
		if err := f.svc.RemoveDomain(ctx, beta, dom.ID); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("beta removing acme's domain: %v", err)
		}
		if got, err := f.svc.VerifyDomain(ctx, alice, dom.ID); err != nil || !got.Verified() || got.VerifiedBy != "alice" {
			t.Fatalf("verifying: %+v, %v", got, err)
		}
		if org, err := f.svc.OrgByDomain(ctx, "Dave@ACME.test"); err != nil || org != "acme" {
			t.Errorf("a verified domain's sign-in: %q, %v", org, err)
		}
		state, code = f.code(t)
		if res, err := f.svc.Finish(ctx, state, code, redirect); err != nil || res.UserID != "dave" || res.Linked != sso.LinkedJIT {
			t.Errorf("an address at a verified domain: %+v, %v", res, err)
		}
		// Taken now: beta can neither verify its pending copy, nor add it
		// again.
		f.dns.SetTXT(dom.RecordName(), dom.RecordValue(), betaDom.RecordValue())
		if _, err := f.svc.VerifyDomain(ctx, beta, betaDom.ID); ctalk.ErrorCode(err) != ctalk.EConflict {
			t.Errorf("beta verifying a domain acme verified: %v", err)
		}
		if err := f.svc.RemoveDomain(ctx, beta, betaDom.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.AddDomain(ctx, beta, "acme.test"); ctalk.ErrorCode(err) != ctalk.EConflict {
			t.Errorf("beta adding a domain acme verified: %v", err)
		}
		doms, err := f.svc.Domains(ctx, beta)
		if err != nil || len(doms) != 0 {
			t.Errorf("beta's domains: %+v, %v", doms, err)
		}
		// Removed, the domain routes nothing, and beta may prove it.
		if err := f.svc.RemoveDomain(ctx, alice, dom.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.OrgByDomain(ctx, "dave@acme.test"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("a removed domain routed a sign-in: %v", err)
		}
		f.prove(t, beta, "acme.test")
	})
}

// TestDomainVerifiedByOneOrg: orgs that each published their record verify
// one domain at the same moment (their DNS answers held back until all
// asked): one wins, the others are refused with a conflict, and the
// domain signs in with the winner's provider.
func TestDomainVerifiedByOneOrg(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		f := setUp(t, d, sso.Settings{})
		callers := []ctalk.Caller{alice}
		for i := range 3 {
			callers = append(callers, addOrg(t, f, fmt.Sprintf("org%d", i)))
		}
		for round := range 3 {
			name := fmt.Sprintf("race%d.test", round)
			ids := make([]string, len(callers))
			var records []string
			for i, c := range callers {
				dom, err := f.svc.AddDomain(ctx, c, name)
				if err != nil {
					t.Fatal(err)
				}
				ids[i], records = dom.ID, append(records, dom.RecordValue())
			}
			f.dns.SetTXT("_ctalk."+name, records...)
			f.dns.HoldTXT(len(callers))
			var (
				wg   sync.WaitGroup
				errs = make([]error, len(callers))
			)
			for i, c := range callers {
				wg.Go(func() { _, errs[i] = f.svc.VerifyDomain(ctx, c, ids[i]) })
			}
			wg.Wait()
			winner := ""
			for i, err := range errs {
				switch ctalk.ErrorCode(err) {
				case "":
					if winner != "" {
						t.Fatalf("round %d: both %s and %s verified %s", round, winner, callers[i].OrgID, name)
					}
					winner = callers[i].OrgID
				case ctalk.EConflict:
				default:
					t.Fatalf("round %d, %s: %v", round, callers[i].OrgID, err)
				}
			}
			if winner == "" {
				t.Fatalf("round %d: nobody verified %s", round, name)
			}
			if org, err := f.svc.OrgByDomain(ctx, "x@"+name); err != nil || org != winner {
				t.Errorf("round %d: %s signs in with %q (%v), want the winner %s", round, name, org, err, winner)
			}
		}
	})
}
