package web_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/notify"
)

// exported is an archive read back: each file's lines, and its bytes.
type exported struct {
	files map[string][]map[string]any
	raw   []byte
	// manifest is manifest.json.
	manifest map[string]any
}

// downloadArchive posts an export form and reads the archive it answers with.
func (c *client) downloadArchive(path string) (*http.Response, *exported) {
	c.t.Helper()
	if c.csrf() == "" {
		c.get("/signin")
	}
	resp, err := c.http.PostForm(c.base+path, url.Values{"csrf": {c.csrf()}})
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/zip" {
		return resp, nil
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		c.t.Fatalf("%s: not a zip: %v", path, err)
	}
	x := &exported{files: map[string][]map[string]any{}}
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			c.t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		x.raw = append(x.raw, b...)
		if f.Name == "manifest.json" {
			if err := json.Unmarshal(b, &x.manifest); err != nil {
				c.t.Fatalf("manifest.json: %v", err)
			}
			continue
		}
		x.files[f.Name] = []map[string]any{}
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if line == "" {
				continue
			}
			var row map[string]any
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				c.t.Fatalf("%s: a line that is not JSON: %v\n%s", f.Name, err, line)
			}
			x.files[f.Name] = append(x.files[f.Name], row)
		}
	}
	return resp, x
}

// has reports whether a file of x has a row whose field is value.
func (x *exported) has(file, field string, value any) bool {
	for _, row := range x.files[file] {
		if row[field] == value {
			return true
		}
	}
	return false
}

// checkManifest fails unless the manifest names every file with its count.
func (x *exported) checkManifest(t *testing.T, kind string) {
	t.Helper()
	if x.manifest["schema"] != "ctalk-export" || x.manifest["version"] != float64(1) || x.manifest["kind"] != kind {
		t.Errorf("manifest: %v", x.manifest)
	}
	files, _ := x.manifest["files"].([]any)
	if len(files) != len(x.files) {
		t.Errorf("the manifest lists %d files, the archive has %d", len(files), len(x.files))
	}
	for _, f := range files {
		f := f.(map[string]any)
		name := f["name"].(string)
		if got, want := len(x.files[name]), int(f["rows"].(float64)); got != want {
			t.Errorf("%s has %d lines, the manifest says %d", name, got, want)
		}
	}
}

// secretColumn names the columns that hold a secret, a hash of one or a
// key: any table's, so that a column added later is looked for too.
var secretColumn = regexp.MustCompile(`hash|secret|token|credential|auth|p256dh|endpoint|handle|^claim$|^url$`)

// secretValues returns every value of a secret column in the rows of
// orgID (of every row of a table without org_id, such as oauth_tokens),
// read through the catalog.
func secretValues(t *testing.T, d *db.DB, orgID string) map[string]string {
	t.Helper()
	ctx := dbtest.Operator()
	out := map[string]string{}
	for _, table := range dbtest.Tables(t, d) {
		rows, err := d.Query(ctx, `SELECT * FROM `+table)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals, err := dbtest.Values(rows)
			if err != nil {
				t.Fatal(err)
			}
			row := map[string]string{}
			for i, c := range cols {
				row[c] = fmt.Sprint(vals[i])
			}
			if org, ok := row["org_id"]; ok && org != orgID {
				continue
			}
			for _, c := range cols {
				if v := row[c]; secretColumn.MatchString(c) && len(v) >= 8 && v != "<nil>" {
					out[table+"."+c] = v
				}
			}
		}
		rows.Close()
	}
	return out
}

// fill gives orgID (made by org) rows in many tables: questions with
// drafts and an answer, a channel with a message, a webhook with its
// secret, login tokens, browser sessions and a personal token. It returns
// the admin alice's client, signed in.
func (s *site) fill(t *testing.T, orgID string) *client {
	t.Helper()
	ctx := dbtest.Operator()
	bob, carol := s.agent(t, orgID, "bob"), s.agent(t, orgID, "carol")
	asked := testkit.OK(t, bob, "ask_person", map[string]any{"to_user_id": "carol", "question": "What is the retry logic?"})["message_id"].(string)
	testkit.OK(t, carol, "propose_response", map[string]any{"message_id": asked, "draft_text": "Three tries."})
	testkit.OK(t, carol, "propose_response", map[string]any{"message_id": asked, "draft_text": "Three tries, backing off."})
	testkit.OK(t, carol, "send_response", map[string]any{"message_id": asked, "final_text": "Three tries, backing off."})
	testkit.OK(t, carol, "ask_person", map[string]any{"to_user_id": "alice", "question": "Who owns billing?"})
	testkit.OK(t, bob, "create_channel", map[string]any{"channel": "dev", "members": []string{"carol"}})
	testkit.OK(t, carol, "post_message", map[string]any{"channel": "dev", "text": "Build 4521 is green"})
	if _, _, err := s.Notify.AddWebhook(ctx, orgID, "bob", "bob", "https://hooks.example.com/T000/B000/XXXXXXXX", notify.FormatJSON); err != nil {
		t.Fatal(err)
	}
	alice := s.newClient(t, orgID, "alice")
	if code, body := alice.post("/tokens", url.Values{"label": {"ci"}, "days": {"30"}}); code != http.StatusOK {
		t.Fatalf("make a personal token: %d %s", code, body)
	}
	return alice
}

// TestOrganizationExport: an admin downloads the whole org as a zip of
// JSON Lines files with a manifest counting them; no secret, hash or token
// of any table is in it, nor anything of another org; the download is
// audited; a member may not take it.
func TestOrganizationExport(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		s.org(t, "globex")
		ctx := dbtest.Operator()
		alice := s.fill(t, "acme")
		testkit.OK(t, s.agent(t, "globex", "bob"), "ask_person", map[string]any{"to_user_id": "carol", "question": "Globex's secret plan?"})

		if resp, x := s.newClient(t, "acme", "bob").downloadArchive("/admin/export"); x != nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("a member's export of the org: %d", resp.StatusCode)
		}
		if code, body := alice.postRaw("/admin/export", url.Values{}); code != http.StatusForbidden || strings.HasPrefix(body, "PK") {
			t.Errorf("an export without the form's CSRF token: %d", code)
		}
		resp, x := alice.downloadArchive("/admin/export")
		if x == nil {
			t.Fatalf("the admin's export: %d", resp.StatusCode)
		}
		if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, `attachment; filename="ctalk-acme-`) {
			t.Errorf("Content-Disposition %q", cd)
		}
		x.checkManifest(t, "organization")
		for _, f := range []string{"organization.jsonl", "members.jsonl", "questions.jsonl", "drafts.jsonl", "question_events.jsonl",
			"shared_answers.jsonl", "glossary.jsonl", "channels.jsonl", "channel_members.jsonl", "channel_messages.jsonl"} {
			if _, ok := x.files[f]; !ok {
				t.Errorf("no %s", f)
			}
		}
		if len(x.files["members.jsonl"]) != 3 || len(x.files["questions.jsonl"]) != 2 || len(x.files["channel_messages.jsonl"]) == 0 {
			t.Errorf("members %d, questions %d, messages %d", len(x.files["members.jsonl"]), len(x.files["questions.jsonl"]), len(x.files["channel_messages.jsonl"]))
		}
		if !x.has("drafts.jsonl", "body", "Three tries.") || !x.has("questions.jsonl", "resolution", "Three tries, backing off.") {
			t.Errorf("the draft or the answer sent is missing: %v %v", x.files["drafts.jsonl"], x.files["questions.jsonl"])
		}
		if !x.has("channel_messages.jsonl", "body", "Build 4521 is green") || !x.has("organization.jsonl", "org_id", "acme") {
			t.Error("the channel's message or the org's settings are missing")
		}
		if bytes.Contains(x.raw, []byte("Globex")) {
			t.Error("the export holds another org's data")
		}
		secrets := secretValues(t, s.DB, "acme")
		for _, must := range []string{"tokens.hash", "web_sessions.hash", "notify_webhooks.secret", "notify_webhooks.url", "users.password_hash", "orgs.admin_password_hash"} {
			if _, ok := secrets[must]; !ok {
				t.Errorf("the test found no value of %s to look for", must)
			}
		}
		for col, v := range secrets {
			if bytes.Contains(x.raw, []byte(v)) {
				t.Errorf("the export holds %s", col)
			}
		}
		testkit.WaitFor(t, 10*time.Second, "the export's audit event", func() (bool, error) {
			var n int
			err := s.DB.QueryRow(ctx, `SELECT COUNT(*) FROM audit_events WHERE org_id = 'acme' AND user_id = 'alice' AND tool = 'web:export_organization' AND outcome = 'ok'`).Scan(&n)
			return n == 1, err
		})
	})
}

// TestPersonExport: a member downloads their own data from their profile,
// in the same format: what they asked, were asked, drafted and posted,
// and nothing of what passed between others.
func TestPersonExport(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		bob, carol := s.agent(t, "acme", "bob"), s.agent(t, "acme", "carol")
		toBob := testkit.OK(t, carol, "ask_person", map[string]any{"to_user_id": "bob", "question": "Is staging up?"})["message_id"].(string)
		testkit.OK(t, bob, "propose_response", map[string]any{"message_id": toBob, "draft_text": "Yes, since noon."})
		testkit.OK(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": "May I deploy?"})
		testkit.OK(t, carol, "ask_person", map[string]any{"to_user_id": "alice", "question": "Private matter between carol and alice"})
		testkit.OK(t, bob, "create_channel", map[string]any{"channel": "dev", "members": []string{"carol"}})
		testkit.OK(t, bob, "post_message", map[string]any{"channel": "dev", "text": "Bob posts here"})
		testkit.OK(t, carol, "post_message", map[string]any{"channel": "dev", "text": "Carol posts here"})

		if _, page := s.newClient(t, "acme", "bob").get("/profile"); !strings.Contains(page, `action="/profile/export"`) {
			t.Fatal("the profile page has no export form")
		}
		resp, x := s.newClient(t, "acme", "bob").downloadArchive("/profile/export")
		if x == nil {
			t.Fatalf("bob's export: %d", resp.StatusCode)
		}
		x.checkManifest(t, "person")
		if x.manifest["user_id"] != "bob" || len(x.files["members.jsonl"]) != 1 || !x.has("members.jsonl", "user_id", "bob") {
			t.Errorf("manifest %v, members %v", x.manifest, x.files["members.jsonl"])
		}
		if len(x.files["questions.jsonl"]) != 2 || !x.has("drafts.jsonl", "body", "Yes, since noon.") {
			t.Errorf("questions %v, drafts %v", x.files["questions.jsonl"], x.files["drafts.jsonl"])
		}
		if !x.has("channel_messages.jsonl", "body", "Bob posts here") || len(x.files["channel_messages.jsonl"]) != 1 {
			t.Errorf("messages %v", x.files["channel_messages.jsonl"])
		}
		if bytes.Contains(x.raw, []byte("Private matter")) || bytes.Contains(x.raw, []byte("Carol posts")) {
			t.Error("bob's export holds what passed between others")
		}
	})
}
