package web_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestOrganizationExportHoldsIdentitySettings: the organization's archive
// holds its single sign-on settings (an OpenID Connect provider, then a
// SAML one whose key was rolled), its email domains with whether each is
// proven, and its SCIM tokens by name with their use, revoked ones too;
// never the client secret, the SAML keys, a SCIM token or its hash, nor
// any other secret of the org's rows.
func TestOrganizationExportHoldsIdentitySettings(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		ctx := dbtest.Operator()
		s := startSSO(t, engine)
		s.org(t, "acme")
		alice := s.newClient(t, "acme", "alice")
		op := testkit.NewOpenIDProvider(t, "ctalk-acme", ssoSecret)
		configureSSO(t, alice, op, url.Values{"link_by_email": {"on"}})
		s.proveDomain(t, alice, "acme.test")
		if code, body := alice.post("/admin/sso/domains", url.Values{"domain": {"pending.test"}}); code != http.StatusOK {
			t.Fatalf("adding a domain: %d %s", code, body)
		}
		admin := ctalk.Caller{OrgID: "acme", UserID: "alice", Admin: true}
		raws := map[string]string{}
		for _, label := range []string{"Okta", "Old Okta"} {
			raw, tok, err := s.SCIM.CreateToken(ctalk.WithOrg(ctx, "acme"), admin, label, 90)
			if err != nil {
				t.Fatal(err)
			}
			raws[label] = raw
			if label == "Old Okta" {
				if err := s.SCIM.RevokeToken(ctalk.WithOrg(ctx, "acme"), "acme", tok.ID); err != nil {
					t.Fatal(err)
				}
			}
		}

		absent := func(t *testing.T, x *exported, what, v string) {
			t.Helper()
			if v == "" {
				t.Fatalf("no value of %s to look for", what)
			}
			if bytes.Contains(x.raw, []byte(v)) {
				t.Errorf("the export holds %s", what)
			}
		}
		export := func(t *testing.T) *exported {
			t.Helper()
			resp, x := alice.downloadArchive("/admin/export")
			if x == nil {
				t.Fatalf("the admin's export: %d", resp.StatusCode)
			}
			x.checkManifest(t, "organization")
			if !x.has("sso_domains.jsonl", "domain", "acme.test") || !x.has("sso_domains.jsonl", "status", "verified") || !x.has("sso_domains.jsonl", "status", "pending") {
				t.Errorf("sso_domains.jsonl: %v", x.files["sso_domains.jsonl"])
			}
			if !x.has("scim_tokens.jsonl", "label", "Okta") || !x.has("scim_tokens.jsonl", "label", "Old Okta") || len(x.files["scim_tokens.jsonl"]) != 2 {
				t.Errorf("scim_tokens.jsonl: %v", x.files["scim_tokens.jsonl"])
			}
			for label, raw := range raws {
				sum := sha256.Sum256([]byte(raw))
				absent(t, x, "the SCIM token "+label, raw)
				absent(t, x, "the hash of the SCIM token "+label, hex.EncodeToString(sum[:]))
			}
			for col, v := range secretValues(t, s.DB, "acme") {
				absent(t, x, col, v)
			}
			return x
		}

		x := export(t)
		if !x.has("sso.jsonl", "kind", "oidc") || !x.has("sso.jsonl", "issuer", op.URL) || !x.has("sso.jsonl", "has_client_secret", true) {
			t.Errorf("sso.jsonl of an OpenID Connect provider: %v", x.files["sso.jsonl"])
		}
		absent(t, x, "the client secret", ssoSecret)

		idp := testkit.NewSAMLProvider(t)
		configureSAML(t, s, alice, idp, "", url.Values{"link_by_email": {"on"}})
		if code, page := alice.post("/admin/sso/roll-key", url.Values{}); code != http.StatusOK {
			t.Fatalf("rolling: %d %s", code, page)
		}
		x = export(t)
		if !x.has("sso.jsonl", "kind", "saml") || !x.has("sso.jsonl", "sso_url", idp.URL+"/sso") || len(x.files["sso.jsonl"]) != 1 {
			t.Errorf("sso.jsonl of a SAML provider: %v", x.files["sso.jsonl"])
		}
		var key, prev, cert string
		if err := s.DB.QueryRow(ctx, `SELECT sp_key, sp_prev_key, sp_cert FROM sso_providers WHERE org_id = 'acme'`).Scan(&key, &prev, &cert); err != nil {
			t.Fatal(err)
		}
		if row := x.files["sso.jsonl"][0]; row["sp_cert_sha256"] == "" || row["prev_sp_cert_sha256"] == "" || row["prev_sp_cert_until"] == nil {
			t.Errorf("sso.jsonl names the SAML certificates by fingerprint: %v", row)
		}
		for what, pemText := range map[string]string{"the SAML key": key, "the SAML key replaced": prev} {
			lines := strings.Split(strings.TrimSpace(pemText), "\n")
			for _, line := range lines[1 : len(lines)-1] {
				absent(t, x, what, line)
			}
		}
	})
}
