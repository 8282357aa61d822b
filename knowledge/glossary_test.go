package knowledge_test

import (
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/knowledge"
)

// TestGlossaryWidensSearchesAndLookUps: an admin's glossary entry makes a
// term and what it means the same, both ways, in find_answers and in the
// look-up, on every replica from its next call; removing it undoes that.
// On both engines.
func TestGlossaryWidensSearchesAndLookUps(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx, me := dbtest.Operator(), caller("acme", "cat")
		admin := adminCaller("acme", "root")
		other := knowledge.NewService(d, f.orgs)
		sso := f.share("acme", "al", "ben", "How do I set up single sign-on for a new app?", "Register it in Okta as an OIDC client.").MessageID
		bill := f.share("acme", "al", "dan", "Who sends the invoices?", "The billing cron emails them on the first of the month.").MessageID
		search := func(k *knowledge.Service, q string) []string {
			t.Helper()
			got, err := k.Search(ctx, me, q, 3)
			if err != nil {
				t.Fatal(err)
			}
			return ids(got)
		}
		look := func(k *knowledge.Service, q string) []string {
			t.Helper()
			got, err := held(k.Suggest(ctx, me, q))
			if err != nil {
				t.Fatal(err)
			}
			return ids(got)
		}
		// Both replicas read the org's answers before the glossary.
		for _, k := range []*knowledge.Service{f.k, other} {
			if got := search(k, "SSO"); len(got) != 0 {
				t.Fatalf("before the glossary, find_answers(SSO) = %v", got)
			}
			if got := look(k, "How do I set up SSO for a new app?"); len(got) != 0 {
				t.Fatalf("before the glossary, the look-up holds back with %v", got)
			}
		}
		if err := f.k.SetGlossaryEntry(ctx, admin, "SSO", "single sign-on"); err != nil {
			t.Fatal(err)
		}
		if err := f.k.SetGlossaryEntry(ctx, admin, "bill", "invoice"); err != nil {
			t.Fatal(err)
		}
		for name, k := range map[string]*knowledge.Service{"this replica": f.k, "another replica": other} {
			if got := search(k, "SSO"); len(got) != 1 || got[0] != sso {
				t.Errorf("%s: find_answers(SSO) = %v, want %s", name, got, sso)
			}
			if got := search(k, "bills"); len(got) != 1 || got[0] != bill {
				t.Errorf("%s: find_answers(bills) = %v, want %s", name, got, bill)
			}
			if got := look(k, "How do I set up SSO for a new app?"); len(got) != 1 || got[0] != sso {
				t.Errorf("%s: the look-up of an SSO question holds back with %v, want %s", name, got, sso)
			}
			if got := look(k, "Who sends the bills?"); len(got) != 1 || got[0] != bill {
				t.Errorf("%s: the look-up of a bills question holds back with %v, want %s", name, got, bill)
			}
		}
		// A British spelling finds the American one with no glossary.
		color := f.share("acme", "al", "eve", "What color is the logo?", "Navy blue.").MessageID
		if got := search(f.k, "colour logo"); len(got) == 0 || got[0] != color {
			t.Errorf("find_answers(colour logo) = %v, want %s first", got, color)
		}
		entries, err := f.k.Glossary(ctx, me)
		if err != nil || len(entries) != 2 || entries[0].Term != "SSO" || entries[0].Means != "single sign-on" || entries[0].UpdatedBy != "root" {
			t.Fatalf("Glossary = %+v, %v", entries, err)
		}
		if err := other.DeleteGlossaryEntry(ctx, admin, "SSO"); err != nil {
			t.Fatal(err)
		}
		if got := search(f.k, "SSO"); len(got) != 0 {
			t.Errorf("after the entry was removed, find_answers(SSO) = %v", got)
		}
	})
}

// TestOnlyAdminsEditTheGlossary: members may read the glossary, not edit
// it; bad entries are refused with what to do, on both engines.
func TestOnlyAdminsEditTheGlossary(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx, member := dbtest.Operator(), caller("acme", "cat")
		admin := adminCaller("acme", "root")
		if err := f.k.SetGlossaryEntry(ctx, member, "SSO", "single sign-on"); ctalk.ErrorCode(err) != ctalk.EForbidden {
			t.Errorf("a member's entry: %v, want forbidden", err)
		}
		for _, c := range []struct{ term, means, says string }{
			{"", "single sign-on", "term is required"},
			{"SSO", strings.Repeat("x", knowledge.MaxGlossaryLen+1), "means"},
			{"the", "single sign-on", "common words"},
			{"colour", "color", "already the same"},
		} {
			err := f.k.SetGlossaryEntry(ctx, admin, c.term, c.means)
			if ctalk.ErrorCode(err) != ctalk.EInvalid || !strings.Contains(ctalk.ErrorMessage(err), c.says) {
				t.Errorf("SetGlossaryEntry(%q, %q) = %v, want invalid saying %q", c.term, c.means, err, c.says)
			}
		}
		if err := f.k.DeleteGlossaryEntry(ctx, admin, "SSO"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("deleting an absent term: %v, want not_found", err)
		}
		if err := f.k.SetGlossaryEntry(ctx, admin, "SSO", "single sign-on"); err != nil {
			t.Fatal(err)
		}
		if err := f.k.SetGlossaryEntry(ctx, admin, "SSO", "single  sign on"); err != nil {
			t.Fatal(err)
		}
		if err := f.k.DeleteGlossaryEntry(ctx, member, "SSO"); ctalk.ErrorCode(err) != ctalk.EForbidden {
			t.Errorf("a member's deletion: %v, want forbidden", err)
		}
		got, err := f.k.Glossary(ctx, member)
		if err != nil || len(got) != 1 || got[0].Means != "single sign on" {
			t.Errorf("Glossary = %+v, %v; want the entry replaced", got, err)
		}
		if got, err := f.k.Glossary(ctx, caller("other", "xi")); err != nil || len(got) != 0 {
			t.Errorf("another org's glossary = %+v, %v", got, err)
		}
	})
}
