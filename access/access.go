// Package access lets people in by email: admins' invites, whose link lets
// the invitee choose their password, and "forgot password" links. It sends
// the mails through mail.Sender; the links' tokens are stored (hashed) by
// auth, and the members they create or change belong to orgs.
package access

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/mail"
	"github.com/ctalk/ctalk/orgs"
)

// Paths of the pages the mailed links open, followed by the link's token.
const (
	InvitePath = "/invite/"
	ResetPath  = "/reset/"
)

// resetMailTimeout bounds the mailing of a reset link, which runs after the
// request was answered.
const resetMailTimeout = 30 * time.Second

// ErrNoEmail is the answer to an invite on a server that sends no email.
var ErrNoEmail = ctalk.Errorf(ctalk.EUnavailable, "this server sends no email (its operator has not set SMTP_URL), so it cannot invite by email; an admin can make an invite link to hand over on the admin page, or add the person with a password they give them (register_user)")

// errNoResetMail is the answer to "forgot password" on a server that sends
// no email.
var errNoResetMail = ctalk.Errorf(ctalk.EUnavailable, "this server sends no email (its operator has not set SMTP_URL), so it cannot mail a reset link; ask your org admin to set a new password for you")

// Config is what the service needs from the server around it.
type Config struct {
	// Mail is the SMTP setup; without it, invites and resets by email are
	// refused saying so.
	Mail mail.Config
	// PublicURL starts every link in a mail (PUBLIC_URL): never a request's
	// Host, which a stranger chooses.
	PublicURL string
	Logger    *slog.Logger
}

// Service invites by email and mails password reset links.
type Service struct {
	cfg    Config
	auth   *auth.Service
	orgs   *orgs.Service
	sender mail.Sender
	// mailing counts reset mails still being sent.
	mailing sync.WaitGroup
}

// New returns the service; sender is mail.New's for cfg.Mail.
func New(cfg Config, a *auth.Service, o *orgs.Service, sender mail.Sender) *Service {
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, auth: a, orgs: o, sender: sender}
}

// Enabled reports whether the server sends email, so that pages offer
// invites and "forgot password" links.
func (s *Service) Enabled() bool {
	return s != nil && s.cfg.Mail.Enabled() && s.cfg.PublicURL != ""
}

// Invite invites in.Email to join orgID as in.UserID, from the admin by: it
// stores the invite and mails its link, valid for auth.InviteTTL. When the
// mail cannot be sent, the invite is withdrawn again and nothing is left of
// it. The caller must have been authorized as an admin of their org. The result
// never holds the link's token.
//
// Returns the errors of orgs.Invite, EUnavailable when the server sends no
// email or the mail could not be sent (saying why).
func (s *Service) Invite(ctx context.Context, c ctalk.Caller, in orgs.NewInvite) (*auth.Invite, error) {
	// A mistake in the input is told first: it needs fixing on any server.
	if err := in.Check(); err != nil {
		return nil, err
	}
	if !s.Enabled() {
		return nil, ErrNoEmail
	}
	inv, raw, err := s.orgs.Invite(ctx, c, in)
	if err != nil {
		return nil, err
	}
	if err := s.sendInvite(ctx, inv, raw); err != nil {
		// The admin is told and can invite again: no invite waits whose
		// link nobody received.
		if werr := s.auth.WithdrawUnsentInvite(context.WithoutCancel(ctx), c.OrgID, inv.UserID, raw); werr != nil {
			s.cfg.Logger.Error("unsent invite not withdrawn", "org_id", c.OrgID, "user_id", inv.UserID, "error", werr)
		}
		return nil, ctalk.Errorf(ctalk.EUnavailable, "could not send the invite to %s: %s; nothing was created, so invite again when it is fixed", inv.Email, ctalk.ErrorMessage(err))
	}
	return inv, nil
}

// errNoLinkBase is the answer to an invite link on a server that does not
// know its own address.
var errNoLinkBase = ctalk.Errorf(ctalk.EUnavailable, "this server does not know its own address (its operator has not set PUBLIC_URL), so it cannot make an invite link; add the person with a password you give them instead")

// LinksEnabled reports whether the server can make invite links for an
// admin to hand over themselves: it knows the address they open.
func (s *Service) LinksEnabled() bool {
	return s != nil && s.cfg.PublicURL != ""
}

// InviteLink stores an invite as Invite does, under the same rules and
// limits, but mails nothing: it returns the invite's link, valid once for
// auth.InviteTTL, for the admin to hand over. Only a person gets it (the
// web app's admin page): the link makes a member, so no agent may hold it.
// The caller must have been authorized as an admin of their org.
//
// Returns the errors of orgs.Invite, EUnavailable when the server does not
// know its own address.
func (s *Service) InviteLink(ctx context.Context, c ctalk.Caller, in orgs.NewInvite) (*auth.Invite, string, error) {
	if err := in.Check(); err != nil {
		return nil, "", err
	}
	if !s.LinksEnabled() {
		return nil, "", errNoLinkBase
	}
	inv, raw, err := s.orgs.Invite(ctx, c, in)
	if err != nil {
		return nil, "", err
	}
	return inv, s.cfg.PublicURL + InvitePath + raw, nil
}

// RenewLink gives the invite of userID in the caller's org a new link, as
// Resend does, and returns it for the admin to hand over instead of
// mailing it; the earlier link stops working. The caller must have been
// authorized as an admin of their org.
//
// Returns the errors of auth.RenewInvite, EUnavailable when the server
// does not know its own address.
func (s *Service) RenewLink(ctx context.Context, c ctalk.Caller, userID string) (*auth.Invite, string, error) {
	userID, err := ctalk.ParseID("user_id", userID)
	if err != nil {
		return nil, "", err
	}
	if !s.LinksEnabled() {
		// Not found is told first, as on a server that makes links.
		return nil, "", s.unlessInvited(ctx, c.OrgID, userID, errNoLinkBase)
	}
	raw, inv, err := s.auth.RenewInvite(ctx, c, userID)
	if err != nil {
		return nil, "", err
	}
	return inv, s.cfg.PublicURL + InvitePath + raw, nil
}

// Resend mails the invite of userID in the caller's org again with a new
// link, valid for auth.InviteTTL; the earlier link stops working. The
// caller must have been authorized as an admin of their org.
//
// Returns the errors of auth.RenewInvite, EUnavailable when the server
// sends no email or the mail could not be sent.
func (s *Service) Resend(ctx context.Context, c ctalk.Caller, userID string) (*auth.Invite, error) {
	orgID := c.OrgID
	userID, err := ctalk.ParseID("user_id", userID)
	if err != nil {
		return nil, err
	}
	if !s.Enabled() {
		// Not found is told first, as on a server that sends email.
		return nil, s.unlessInvited(ctx, orgID, userID, ErrNoEmail)
	}
	raw, inv, err := s.auth.RenewInvite(ctx, c, userID)
	if err != nil {
		return nil, err
	}
	if err := s.sendInvite(ctx, inv, raw); err != nil {
		return nil, ctalk.Errorf(ctalk.EUnavailable, "could not send the invite to %s: %s; the earlier link no longer works, so try Resend again when it is fixed", inv.Email, ctalk.ErrorMessage(err))
	}
	return inv, nil
}

// unlessInvited returns refusal when userID has an invite waiting in
// orgID, else that no invite of userID waits: an action on an invite that
// this server cannot carry out says "not found" first, as where it can.
func (s *Service) unlessInvited(ctx context.Context, orgID, userID string, refusal error) error {
	invites, err := s.auth.Invites(ctx, orgID)
	if err != nil {
		return err
	}
	for _, inv := range invites {
		if inv.UserID == userID {
			return refusal
		}
	}
	return auth.NoInvite(userID)
}

func (s *Service) sendInvite(ctx context.Context, inv *auth.Invite, raw string) error {
	org, err := s.orgs.Org(ctx, inv.OrgID)
	if err != nil {
		return err
	}
	inviter := "An admin of " + org.Name
	if u, err := s.orgs.User(ctx, inv.OrgID, inv.InvitedBy); err == nil {
		inviter = u.Name
	}
	m, err := render(inviteMail, map[string]any{
		"Inviter": inviter, "Org": org.Name, "OrgID": org.ID, "UserID": inv.UserID, "Name": inv.Name,
		"Link": s.cfg.PublicURL + InvitePath + raw, "Expires": inv.ExpiresAt.UTC().Format("Monday 2 January 2006, 15:04 MST"),
	})
	if err != nil {
		return err
	}
	m.To = inv.Email
	m.Subject = fmt.Sprintf("%s invites you to %s on ctalk", oneLine(inviter), oneLine(org.Name))
	return s.sender.Send(ctx, m)
}

// ForgotPassword answers a "forgot password" request for the member of
// orgID named by who (a user id or their address), from the client address
// in ctx: when that member exists and has an address, a reset link valid
// for auth.ResetTTL is mailed to it, after the answer. The answer, and the
// work done before it, are the same whether or not the member exists.
//
// Returns EInvalid for malformed input, ERateLimited (see
// auth.RequestReset), EUnavailable when the server sends no email.
func (s *Service) ForgotPassword(ctx context.Context, orgID, who string) error {
	if _, _, _, err := auth.ParseAccount(orgID, who); err != nil {
		return err
	}
	if !s.Enabled() {
		return errNoResetMail
	}
	req, err := s.auth.RequestReset(ctx, orgID, who)
	if err != nil {
		return err
	}
	if req.Token == "" {
		return nil
	}
	// The mail goes after the answer: its time must not tell the requester
	// that the account exists.
	s.mailing.Add(1)
	go func() {
		defer s.mailing.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resetMailTimeout)
		defer cancel()
		if err := s.sendReset(ctx, req); err != nil {
			s.cfg.Logger.Warn("password reset mail not sent", "org_id", req.OrgID, "user_id", req.UserID, "temporary", mail.Temporary(err), "error", err)
		}
	}()
	return nil
}

// TellReset mails the member userID of orgID, when they have an address
// and the server sends email, that the admin adminID reset their password,
// after the caller's answer; a mail that cannot be sent is logged. It
// carries no link that does anything but open the sign-in page.
func (s *Service) TellReset(ctx context.Context, orgID, userID, adminID string) {
	s.later(ctx, "mail telling of a password reset not sent", orgID, userID, func(ctx context.Context) error {
		return s.sendResetByAdmin(ctx, orgID, userID, adminID)
	})
}

func (s *Service) sendResetByAdmin(ctx context.Context, orgID, userID, adminID string) error {
	u, org, err := s.orgs.Member(ctx, orgID, userID)
	if err != nil || u.Email == "" {
		return err
	}
	admin, err := s.orgs.User(ctx, orgID, adminID)
	if err != nil {
		return err
	}
	m, err := render(resetByAdminMail, map[string]any{
		"Name": u.Name, "Org": org.Name, "OrgID": org.ID, "UserID": u.ID, "Admin": admin.Name,
		"Link": s.cfg.PublicURL + "/signin",
	})
	if err != nil {
		return err
	}
	m.To = u.Email
	m.Subject = "Your ctalk password for " + oneLine(org.Name) + " was reset by an admin"
	return s.sender.Send(ctx, m)
}

// Wait returns once the reset mails already started have been sent or
// have failed.
func (s *Service) Wait() { s.mailing.Wait() }

func (s *Service) sendReset(ctx context.Context, req *auth.ResetRequest) error {
	u, org, err := s.orgs.Member(ctx, req.OrgID, req.UserID)
	if err != nil {
		return err
	}
	m, err := render(resetMail, map[string]any{
		"Name": u.Name, "Org": org.Name, "OrgID": org.ID, "UserID": u.ID,
		"Link": s.cfg.PublicURL + ResetPath + req.Token, "Minutes": int(auth.ResetTTL.Minutes()),
	})
	if err != nil {
		return err
	}
	m.To = u.Email
	m.Subject = "Reset your ctalk password for " + oneLine(org.Name)
	return s.sender.Send(ctx, m)
}

// oneLine keeps a header's text on one line: names are people's text.
func oneLine(s string) string { return mail.OneLine(s) }

// newMail is a mail's text and HTML parts, from one template each, with
// every value they print made one line (see mail.Template): the names they
// show are people's text, escaped in the HTML part too.
func newMail(text, html string) *mail.Template { return mail.NewTemplate(text, html) }

func render(t *mail.Template, data map[string]any) (mail.Message, error) { return t.Render(data) }
