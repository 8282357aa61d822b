package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
)

// TestAdminsEditTheGlossary: an admin adds and removes a term on the
// glossary page, recorded in the audit log; a bad entry is refused next to
// the form; a member can neither see the page nor edit it.
func TestAdminsEditTheGlossary(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		alice, bob := s.newClient(t, "acme", "alice"), s.newClient(t, "acme", "bob")
		if _, body := alice.get("/admin/glossary"); !strings.Contains(body, "No term yet") {
			t.Fatalf("an empty glossary: %s", body)
		}
		if code, body := alice.post("/admin/glossary", url.Values{"term": {"SSO"}, "means": {"single sign-on"}}); code != http.StatusOK || !strings.Contains(body, "Saved") || !strings.Contains(body, "single sign-on") {
			t.Fatalf("adding SSO: %d %s", code, body)
		}
		s.waitAuditEvent(t, "acme", "alice", "web:set_glossary_entry", "ok", "")
		if code, body := alice.post("/admin/glossary", url.Values{"term": {"the"}, "means": {"single sign-on"}}); code != http.StatusBadRequest || !strings.Contains(body, "only common words") || !strings.Contains(body, `aria-describedby="glossary-error"`) {
			t.Errorf("a term of common words: %d, want 400 saying why next to the form", code)
		}
		if code, _ := bob.get("/admin/glossary"); code != http.StatusForbidden {
			t.Errorf("a member's GET /admin/glossary: %d, want 403", code)
		}
		for _, path := range []string{"/admin/glossary", "/admin/glossary/remove"} {
			if code, _ := bob.post(path, url.Values{"term": {"SSO"}, "means": {"something else"}}); code != http.StatusForbidden {
				t.Errorf("a member's POST %s: %d, want 403", path, code)
			}
		}
		if code, body := alice.post("/admin/glossary/remove", url.Values{"term": {"SSO"}}); code != http.StatusOK || !strings.Contains(body, "Removed") || !strings.Contains(body, "No term yet") {
			t.Errorf("removing SSO: %d %s", code, body)
		}
		if code, body := alice.post("/admin/glossary/remove", url.Values{"term": {"SSO"}}); code != http.StatusNotFound || !strings.Contains(body, "no term") {
			t.Errorf("removing it again: %d, want 404", code)
		}
	})
}
