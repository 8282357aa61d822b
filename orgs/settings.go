package orgs

import (
	"context"
	"fmt"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Approval modes of an organization: how an answer is approved before it is
// sent.
const (
	// ApprovalAgent lets the answering agent send exactly the latest draft
	// its person approved in the conversation.
	ApprovalAgent = "agent"
	// ApprovalHuman also needs the person to approve each draft in the web
	// app, signed in as the question's recipient.
	ApprovalHuman = "human"
)

// Channel post modes of an organization: whether an agent's channel post
// goes out at once or waits for its person.
const (
	// ChannelPostAgent publishes an agent's post at once, labelled as
	// posted by the agent for its person.
	ChannelPostAgent = "agent"
	// ChannelPostHuman holds an agent's post until its person approves,
	// edits or rejects it in the web app, signed in.
	ChannelPostHuman = "human"
)

// Whether an agent may log in over MCP with its person's password.
const (
	// AgentLoginAllowed lets the login tool take a password (the default).
	AgentLoginAllowed = "allowed"
	// AgentLoginDisabled makes the login tool refuse passwords and say how
	// to connect instead: browser sign-in (OAuth) or a personal token.
	AgentLoginDisabled = "disabled"
)

// Approval factors of an organization: what an approval in the web app
// (approve, edit, answer, decline, reject, and deciding held channel posts)
// needs besides the person's signed-in browser.
const (
	// FactorSession needs only the signed-in browser session.
	FactorSession = "session"
	// FactorPasskey needs a passkey verification of the last few minutes
	// in that session (auth.PasskeyFresh), asked for on the spot.
	FactorPasskey = "passkey"
)

// Knowledge sharing defaults of an organization: whether an answer, once
// sent, joins the answers the whole org can find (find_answers, the
// Knowledge page).
const (
	// SharingOff shares no answer and shows none shared before.
	SharingOff = "off"
	// SharingAsk lets the person choose for each answer; unshared unless
	// they (or, in agent approval mode, their agent for them) say so.
	SharingAsk = "ask"
	// SharingOn shares each answer unless the person says no.
	SharingOn = "on"
)

// What becomes of the questions still waiting for a member who leaves an
// organization (departure_questions).
const (
	// DepartureDecline declines them to their askers (the default).
	DepartureDecline = "decline"
	// DepartureDelegate forwards each to the member's away delegate, when
	// they have one who is still a member, and declines the rest.
	DepartureDelegate = "delegate"
)

// MaxStaleDays bounds knowledge_stale_days.
const MaxStaleDays = 3650

// Settings are an organization's settings as an admin changes them: an
// empty field (nil for RequirePasskey and KnowledgeStaleDays) stays as it
// is.
type Settings struct {
	ApprovalMode       string
	ChannelPostMode    string
	AgentPasswordLogin string
	ApprovalFactor     string
	RequirePasskey     *bool
	// KnowledgeSharing is SharingOff, SharingAsk or SharingOn.
	KnowledgeSharing string
	// KnowledgeStaleDays marks shared answers older than this many days as
	// possibly stale; 0 never does.
	KnowledgeStaleDays *int
	// DepartureQuestions is DepartureDecline or DepartureDelegate.
	DepartureQuestions string
	// UnlessPasskeysAsked applies the change only while the org asks for
	// no passkey (see Org.AsksForPasskeys), in the statement that writes
	// it: a weakening let through without a passkey verification because
	// the org asked for none cannot land after a person turned passkeys on.
	UnlessPasskeysAsked bool
	// kept says that Against left out values the org holds already: the
	// settings count as saved even when nothing else is given.
	kept bool
}

// weakening is a value of an org setting that takes oversight away from
// people: only a person, in the web app, may choose it; an agent may only
// choose the other, stronger values.
type weakening struct {
	setting string
	weaker  string
	value   func(Settings) string
	clear   func(*Settings)
}

// weakenings lists every weakening, one line per setting.
var weakenings = []weakening{
	{"approval_mode", ApprovalAgent, func(s Settings) string { return s.ApprovalMode }, func(s *Settings) { s.ApprovalMode = "" }},
	{"channel_post_mode", ChannelPostAgent, func(s Settings) string { return s.ChannelPostMode }, func(s *Settings) { s.ChannelPostMode = "" }},
	{"agent_password_login", AgentLoginAllowed, func(s Settings) string { return s.AgentPasswordLogin }, func(s *Settings) { s.AgentPasswordLogin = "" }},
	{"approval_factor", FactorSession, func(s Settings) string { return s.ApprovalFactor }, func(s *Settings) { s.ApprovalFactor = "" }},
	// Sharing every answer by default widens who reads a person's words
	// without their choosing each time: a person's power. "ask" keeps the
	// choice with the person for each answer, so an agent may set it.
	{"knowledge_sharing", SharingOn, func(s Settings) string { return s.KnowledgeSharing }, func(s *Settings) { s.KnowledgeSharing = "" }},
	{"require_passkey", "false", func(s Settings) string {
		if s.RequirePasskey != nil && !*s.RequirePasskey {
			return "false"
		}
		return ""
	}, func(s *Settings) { s.RequirePasskey = nil }},
}

// Weakening returns the first setting that in sets to a value weakening
// oversight, with that value, or ok false when in only keeps or strengthens.
// Agents' credentials may not weaken: their callers refuse such a change,
// whatever the org's current value, so that no race with a person's change
// can let one through.
func (in Settings) Weakening() (setting, value string, ok bool) {
	for _, w := range weakenings {
		if w.value(in) == w.weaker {
			return w.setting, w.weaker, true
		}
	}
	return "", "", false
}

// Against returns in without the weakening values that o holds already:
// a form that sends every setting then writes only the weakenings it
// changes, and cannot undo a stronger value that a person set meanwhile.
func (in Settings) Against(o *Org) Settings {
	out := in
	for _, w := range weakenings {
		if w.value(in) == w.weaker && w.value(o.Settings()) == w.weaker {
			w.clear(&out)
			out.kept = true
		}
	}
	return out
}

// Settings are o's settings, every one given.
func (o *Org) Settings() Settings {
	s := Settings{ApprovalMode: o.ApprovalMode, ChannelPostMode: o.ChannelPostMode, AgentPasswordLogin: o.AgentPasswordLogin,
		ApprovalFactor: o.ApprovalFactor, RequirePasskey: &o.RequirePasskey, DepartureQuestions: o.DepartureQuestions}
	if o.Knowledge != nil {
		s.KnowledgeSharing, s.KnowledgeStaleDays = o.Knowledge.Sharing, &o.Knowledge.StaleDays
	}
	return s
}

// AsksForPasskeys says whether o asks its people for passkeys (its
// approval_factor is passkey, or it requires one of every member): then
// weakening any of its settings needs what its approvals need, a fresh
// passkey verification.
func (o *Org) AsksForPasskeys() bool { return o.ApprovalFactor == FactorPasskey || o.RequirePasskey }

// SetApprovalMode sets how answers are approved in orgID: ApprovalAgent or
// ApprovalHuman. The caller must have been authorized as an admin of orgID.
//
// Returns EInvalid, ENotFound.
func (s *Service) SetApprovalMode(ctx context.Context, orgID, mode string) (*Org, error) {
	if mode == "" {
		return nil, ctalk.Errorf(ctalk.EInvalid, "approval_mode is not valid; use \"agent\" or \"human\"")
	}
	return s.SetSettings(ctx, orgID, Settings{ApprovalMode: mode})
}

// SetSettings changes the settings of orgID that in gives, in one
// statement. The caller must have been authorized as an admin of orgID.
//
// Returns EInvalid (also when in changes nothing), ENotFound, EConflict
// when in.UnlessPasskeysAsked and the org asks for passkeys.
func (s *Service) SetSettings(ctx context.Context, orgID string, in Settings) (*Org, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	stale := -1
	if in.KnowledgeStaleDays != nil {
		stale = *in.KnowledgeStaleDays
	}
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		// require_passkey is given as 1 (on), 0 (off) or -1 (unchanged).
		require, unless := -1, 0
		if in.UnlessPasskeysAsked {
			unless = 1
		}
		if in.RequirePasskey != nil {
			require = 0
			if *in.RequirePasskey {
				require = 1
			}
		}
		res, err := tx.Exec(ctx, `UPDATE orgs SET approval_mode = COALESCE(NULLIF($1, ''), approval_mode),
			channel_post_mode = COALESCE(NULLIF($2, ''), channel_post_mode),
			agent_password_login = COALESCE(NULLIF($3, ''), agent_password_login),
			approval_factor = COALESCE(NULLIF($5, ''), approval_factor),
			require_passkey = CASE WHEN $6 < 0 THEN require_passkey ELSE $6 = 1 END,
			knowledge_sharing = COALESCE(NULLIF($7, ''), knowledge_sharing),
			knowledge_stale_days = CASE WHEN $8 < 0 THEN knowledge_stale_days ELSE $8 END,
			departure_questions = COALESCE(NULLIF($11, ''), departure_questions),
			settings_saved_at = $9 WHERE id = $4 AND ($10 = 0 OR (approval_factor = 'session' AND NOT require_passkey))`,
			in.ApprovalMode, in.ChannelPostMode, in.AgentPasswordLogin, orgID, in.ApprovalFactor, require, in.KnowledgeSharing, stale, s.db.Now(), unless, in.DepartureQuestions)
		if err != nil {
			return fmt.Errorf("set org settings: %w", err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			return nil
		}
		if _, err := s.Org(ctx, orgID); err != nil || unless == 0 {
			return notFoundOrg(orgID)
		}
		return ctalk.Errorf(ctalk.EConflict, "your organization now asks for passkeys (someone changed its settings meanwhile), so weakening a setting needs a passkey verification: reload the page and save again")
	})
	if err != nil {
		return nil, err
	}
	s.changed(ctx, orgID, "")
	return s.Org(ctx, orgID)
}

// check says what is wrong with in, if anything.
func (in Settings) check() error {
	enums := []struct{ name, value, a, b, c string }{
		{"approval_mode", in.ApprovalMode, ApprovalAgent, ApprovalHuman, ""},
		{"channel_post_mode", in.ChannelPostMode, ChannelPostAgent, ChannelPostHuman, ""},
		{"agent_password_login", in.AgentPasswordLogin, AgentLoginAllowed, AgentLoginDisabled, ""},
		{"approval_factor", in.ApprovalFactor, FactorSession, FactorPasskey, ""},
		{"knowledge_sharing", in.KnowledgeSharing, SharingOff, SharingAsk, SharingOn},
		{"departure_questions", in.DepartureQuestions, DepartureDecline, DepartureDelegate, ""},
	}
	given := in.RequirePasskey != nil || in.KnowledgeStaleDays != nil || in.kept
	for _, e := range enums {
		given = given || e.value != ""
		if e.value == "" || e.value == e.a || e.value == e.b || (e.c != "" && e.value == e.c) {
			continue
		}
		if e.c != "" {
			return ctalk.Errorf(ctalk.EInvalid, "%s is not valid; use %q, %q or %q", e.name, e.a, e.b, e.c)
		}
		return ctalk.Errorf(ctalk.EInvalid, "%s is not valid; use %q or %q", e.name, e.a, e.b)
	}
	if !given {
		return ctalk.Errorf(ctalk.EInvalid, "give approval_mode, channel_post_mode, agent_password_login, approval_factor, require_passkey, knowledge_sharing, knowledge_stale_days, departure_questions or several")
	}
	if d := in.KnowledgeStaleDays; d != nil && (*d < 0 || *d > MaxStaleDays) {
		return ctalk.Errorf(ctalk.EInvalid, "knowledge_stale_days must be 0 (never stale) to %d days; got %d", MaxStaleDays, *d)
	}
	return nil
}

// Knowledge is how an organization shares answers.
type Knowledge struct {
	// Sharing is SharingOff, SharingAsk or SharingOn.
	Sharing string `json:"knowledge_sharing"`
	// StaleDays marks shared answers older than this as possibly stale; 0
	// never does.
	StaleDays int `json:"knowledge_stale_days"`
}

// KnowledgeSettings returns how orgID shares answers, read through r so
// that a caller's transaction reads it with its other reads.
func KnowledgeSettings(ctx context.Context, r db.Reader, orgID string) (Knowledge, error) {
	var k Knowledge
	if err := r.QueryRow(ctx, `SELECT knowledge_sharing, knowledge_stale_days FROM orgs WHERE id = $1`, orgID).Scan(&k.Sharing, &k.StaleDays); err != nil {
		return k, fmt.Errorf("read knowledge settings: %w", err)
	}
	return k, nil
}

// ChannelPostMode returns whether agents' channel posts in orgID wait for
// their person, read through r so that a caller's transaction reads it with
// its other reads.
func ChannelPostMode(ctx context.Context, r db.Reader, orgID string) (string, error) {
	var mode string
	if err := r.QueryRow(ctx, `SELECT channel_post_mode FROM orgs WHERE id = $1`, orgID).Scan(&mode); err != nil {
		return "", fmt.Errorf("read channel post mode: %w", err)
	}
	return mode, nil
}

// ApprovalMode returns how answers are approved in orgID, read through r so
// that a caller's transaction reads it with its other reads.
func ApprovalMode(ctx context.Context, r db.Reader, orgID string) (string, error) {
	var mode string
	if err := r.QueryRow(ctx, `SELECT approval_mode FROM orgs WHERE id = $1`, orgID).Scan(&mode); err != nil {
		return "", fmt.Errorf("read approval mode: %w", err)
	}
	return mode, nil
}

// ApprovalFactor returns what an approval in the web app needs in orgID
// (FactorSession or FactorPasskey), read through r.
func ApprovalFactor(ctx context.Context, r db.Reader, orgID string) (string, error) {
	var factor string
	if err := r.QueryRow(ctx, `SELECT approval_factor FROM orgs WHERE id = $1`, orgID).Scan(&factor); err != nil {
		return "", fmt.Errorf("read approval factor: %w", err)
	}
	return factor, nil
}
