package sso_test

import (
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/sso"
)

// TestVerifiedDomainLapsesWithItsRecord: a verified domain is looked up
// again once DomainRecheck has passed, not before. Its record gone, it
// goes back to pending, reported once, and no longer routes a sign-in by
// email; a domain whose record stays is kept verified and not looked up
// again for a day; while DNS fails, a domain stays verified.
func TestVerifiedDomainLapsesWithItsRecord(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		var offset time.Duration
		d.Now = func() time.Time { return time.Now().UTC().Add(offset) }
		f := setUp(t, d, sso.Settings{LinkByEmail: true})
		gone, kept := f.prove(t, alice, "acme.test"), f.prove(t, alice, "keep.test")
		recheck := func(want ...string) {
			t.Helper()
			before := f.dns.Queries()
			lapsed, err := f.svc.RecheckDomains(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range lapsed {
				if l.OrgID != "acme" {
					t.Errorf("lapsed %+v, of another org", l)
				}
				got = append(got, l.Domain)
			}
			if len(got) != len(want) || len(want) == 1 && got[0] != want[0] {
				t.Errorf("lapsed %v, want %v (after %d lookups)", got, want, f.dns.Queries()-before)
			}
		}

		f.dns.SetTXT(gone.RecordName())
		recheck()
		if _, err := f.svc.OrgByDomain(ctx, "bob@acme.test"); err != nil {
			t.Fatalf("before a day passed: %v", err)
		}

		offset = sso.DomainRecheck + time.Minute
		f.dns.Fail(true)
		recheck()
		f.dns.Fail(false)
		recheck("acme.test")
		recheck()
		if _, err := f.svc.OrgByDomain(ctx, "bob@acme.test"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("a lapsed domain still routes a sign-in: %v", err)
		}
		if org, err := f.svc.OrgByDomain(ctx, "bob@keep.test"); err != nil || org != "acme" {
			t.Errorf("the domain whose record stayed: %q, %v", org, err)
		}
		ds, err := f.svc.Domains(ctx, alice)
		if err != nil {
			t.Fatal(err)
		}
		for _, dom := range ds {
			if want := dom.ID == kept.ID; dom.Verified() != want {
				t.Errorf("%s verified %v, want %v", dom.Name, dom.Verified(), want)
			}
		}

		// Published again and verified again: kept at its next look-up.
		f.dns.SetTXT(gone.RecordName(), gone.RecordValue())
		if dom, err := f.svc.VerifyDomain(ctx, alice, gone.ID); err != nil || !dom.Verified() {
			t.Fatalf("verifying again: %+v, %v", dom, err)
		}
		offset = 2*sso.DomainRecheck + 2*time.Minute
		before := f.dns.Queries()
		recheck()
		if f.dns.Queries() == before {
			t.Error("the domains due were not looked up again")
		}
	})
}
