package usecase

import (
	"archive/zip"
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/knowledge"
	"github.com/ctalk/ctalk/orgs"
)

// ExportSchema names the archives Export writes, and ExportVersion is the
// version of their schema (docs/export.md), written in each archive's
// manifest.json. A change that removes or renames a field, or changes
// what one means, moves the version on; a new field or file does not.
const (
	ExportSchema  = "ctalk-export"
	ExportVersion = 1
)

// Export writes an organization's data, or one member's, as a zip archive
// of JSON Lines files, one per kind of row, and a manifest.
type Export struct {
	orgs      *orgs.Service
	inbox     *inbox.Service
	knowledge *knowledge.Service
	channels  *channels.Service
	more      []OrgFile
	now       func() time.Time
}

// OrgFile is a file of an organization's archive, never of a person's,
// written by a service this package does not import: single sign-on's and
// SCIM's settings (SCIM imports usecase for its departures).
type OrgFile struct {
	Name string
	Rows func(ctx context.Context, orgID string, emit func(any) error) error
}

// NewExport returns the export over the services that own the rows, with
// more after their files in an organization's archive.
func NewExport(o *orgs.Service, in *inbox.Service, k *knowledge.Service, ch *channels.Service, more ...OrgFile) *Export {
	return &Export{orgs: o, inbox: in, knowledge: k, channels: ch, more: more, now: time.Now}
}

// Manifest is an archive's manifest.json, written last: an archive
// without it was cut short.
type Manifest struct {
	Schema    string         `json:"schema"`
	Version   int            `json:"version"`
	Kind      string         `json:"kind"`
	OrgID     string         `json:"org_id"`
	UserID    string         `json:"user_id,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
	Files     []ManifestFile `json:"files"`
}

// ManifestFile is a file of the archive and how many rows (lines) it has.
type ManifestFile struct {
	Name string `json:"name"`
	Rows int    `json:"rows"`
}

// Kinds of archive, Manifest.Kind.
const (
	ExportOrganization = "organization"
	ExportPerson       = "person"
)

// archiveFile is one file of an archive and the owner's method that
// streams its rows for an org, or for one member when userID is set.
type archiveFile struct {
	name string
	rows func(ctx context.Context, orgID, userID string, emit func(any) error) error
}

func (e *Export) files(person bool) []archiveFile {
	org := func(f func(ctx context.Context, orgID string, emit func(any) error) error) func(context.Context, string, string, func(any) error) error {
		return func(ctx context.Context, orgID, _ string, emit func(any) error) error { return f(ctx, orgID, emit) }
	}
	settings := func(ctx context.Context, orgID string, emit func(any) error) error {
		o, err := e.orgs.Org(ctx, orgID)
		if err != nil {
			return err
		}
		return emit(o)
	}
	files := []archiveFile{
		{"organization.jsonl", org(settings)},
		{"members.jsonl", e.orgs.ExportMembers},
		{"questions.jsonl", e.inbox.ExportQuestions},
		{"drafts.jsonl", e.inbox.ExportDrafts},
		{"question_events.jsonl", e.inbox.ExportEvents},
		{"shared_answers.jsonl", e.knowledge.ExportAnswers},
		{"glossary.jsonl", org(e.knowledge.ExportGlossary)},
		{"channels.jsonl", org(e.channels.ExportChannels)},
		{"channel_members.jsonl", e.channels.ExportMembers},
		{"channel_messages.jsonl", e.channels.ExportMessages},
	}
	if !person {
		for _, f := range e.more {
			files = append(files, archiveFile{f.Name, org(f.Rows)})
		}
		return files
	}
	var mine []archiveFile
	for _, f := range files {
		switch f.name {
		case "glossary.jsonl", "channels.jsonl":
		default:
			mine = append(mine, f)
		}
	}
	return mine
}

// Organization writes the whole of the caller's org to w, streamed: each
// row is written as it is read. Each file is read by one statement, so
// a row changed during the export may show in one file and not in another.
// Once writing began an error leaves the archive without its manifest.
//
// Returns EForbidden when the caller is not an admin, the database's
// errors, or w's.
func (e *Export) Organization(ctx context.Context, c ctalk.Caller, w io.Writer) (*Manifest, error) {
	if !c.Admin {
		return nil, ctalk.Errorf(ctalk.EForbidden, "only an admin of the organization may export all of its data; export your own from your profile")
	}
	return e.write(ctx, w, &Manifest{Kind: ExportOrganization, OrgID: c.OrgID}, e.files(false))
}

// Person writes the caller's own data to w, streamed, in the format of
// Organization: their member row and profile, the questions they asked
// or were asked, the drafts of those they were asked, the steps of
// questions' ways they took or that reached them, the shared answers they
// asked or gave, their channel memberships and the messages they posted.
//
// Returns the database's errors or w's.
func (e *Export) Person(ctx context.Context, c ctalk.Caller, w io.Writer) (*Manifest, error) {
	return e.write(ctx, w, &Manifest{Kind: ExportPerson, OrgID: c.OrgID, UserID: c.UserID}, e.files(true))
}

func (e *Export) write(ctx context.Context, w io.Writer, m *Manifest, files []archiveFile) (*Manifest, error) {
	m.Schema, m.Version, m.CreatedAt, m.Files = ExportSchema, ExportVersion, e.now().UTC(), []ManifestFile{}
	zw := zip.NewWriter(w)
	for _, f := range files {
		out, err := zw.CreateHeader(&zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: m.CreatedAt})
		if err != nil {
			return nil, err
		}
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		n := 0
		if err := f.rows(ctx, m.OrgID, m.UserID, func(row any) error {
			n++
			return enc.Encode(row)
		}); err != nil {
			return nil, err
		}
		m.Files = append(m.Files, ManifestFile{Name: f.name, Rows: n})
	}
	out, err := zw.CreateHeader(&zip.FileHeader{Name: "manifest.json", Method: zip.Deflate, Modified: m.CreatedAt})
	if err != nil {
		return nil, err
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return m, zw.Close()
}
