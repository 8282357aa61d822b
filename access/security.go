package access

import (
	"context"
	"fmt"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/mail"
	"github.com/ctalk/ctalk/orgs"
)

// PasskeyConfirmPath is the page a passkey's confirmation link opens,
// followed by the link's token.
const PasskeyConfirmPath = "/passkeys/confirm/"

// MailPasskeyConfirm mails the member userID of orgID the link that
// confirms their passkey name, which waits for it (see
// auth.FinishPasskeyRegistration); raw is the link's token. It reports
// false, with no error, when the server sends no email or the member has
// no address: then only an admin's approval confirms it.
//
// Returns EUnavailable when the mail could not be sent, saying why.
func (s *Service) MailPasskeyConfirm(ctx context.Context, orgID, userID, name, raw string) (bool, error) {
	if !s.Enabled() {
		return false, nil
	}
	u, org, err := s.orgs.Member(ctx, orgID, userID)
	if err != nil || u.Email == "" {
		return false, err
	}
	m, err := render(passkeyConfirmMail, map[string]any{
		"Name": u.Name, "Org": org.Name, "OrgID": org.ID, "UserID": u.ID, "Passkey": name,
		"Link": s.cfg.PublicURL + PasskeyConfirmPath + raw, "Hours": int(auth.PasskeyConfirmTTL.Hours()),
	})
	if err != nil {
		return false, err
	}
	m.To = u.Email
	m.Subject = "Confirm the new passkey of your ctalk account in " + oneLine(org.Name)
	if err := s.sender.Send(ctx, m); err != nil {
		return false, ctalk.Errorf(ctalk.EUnavailable, "the passkey was added but the mail that confirms it could not be sent (%s): ask an admin to approve it on your member page, or remove it and add it again", ctalk.ErrorMessage(err))
	}
	return true, nil
}

// Changes to a person's passkeys that TellPasskey mails them about.
const (
	PasskeyAdded    = "added"
	PasskeyRemoved  = "removed"
	PasskeyApproved = "approved"
	// PasskeyConfirmed is a confirmation by the server's operator, from
	// its shell ("ctalk passkeys confirm"), where no link could be mailed
	// and no admin could approve.
	PasskeyConfirmed = "confirmed"
)

// TellPasskey mails the member userID of orgID, when they have an address
// and the server sends email, that their passkey name was added, removed,
// approved by the admin adminID, or confirmed by the server's operator
// (change is PasskeyAdded, PasskeyRemoved, PasskeyApproved or
// PasskeyConfirmed), after the caller's answer; a mail that cannot be
// sent is logged.
func (s *Service) TellPasskey(ctx context.Context, orgID, userID, name, change, adminID string) {
	s.later(ctx, "mail telling of a passkey change not sent", orgID, userID, func(ctx context.Context) error {
		u, org, err := s.orgs.Member(ctx, orgID, userID)
		if err != nil || u.Email == "" {
			return err
		}
		data := map[string]any{"Name": u.Name, "Org": org.Name, "OrgID": org.ID, "UserID": u.ID, "Passkey": name, "Change": change,
			"When": s.now().Format("Monday 2 January 2006, 15:04 MST"), "Link": s.cfg.PublicURL + "/profile#passkeys"}
		if adminID != "" {
			admin, err := s.orgs.User(ctx, orgID, adminID)
			if err != nil {
				return err
			}
			data["Admin"] = admin.Name
		}
		m, err := render(passkeyChangedMail, data)
		if err != nil {
			return err
		}
		m.To = u.Email
		m.Subject = fmt.Sprintf("A passkey was %s on your ctalk account in %s", change, oneLine(org.Name))
		return s.sender.Send(ctx, m)
	})
}

// ChangeEmail sets or clears (email "") the address of the member userID
// of orgID, by the member themselves or by the admin adminID, and mails
// the address it replaces, when there was one and the server sends email,
// that it was changed (to what, and by whom), after the caller's answer.
// The caller must have verified the person who asks afresh, and
// authorized adminID as an admin of orgID.
//
// Returns the errors of orgs.SetEmail.
func (s *Service) ChangeEmail(ctx context.Context, orgID, userID, email, adminID string) (*orgs.User, error) {
	before, err := s.orgs.User(ctx, orgID, userID)
	if err != nil {
		return nil, err
	}
	u, err := s.orgs.SetEmail(ctx, orgID, userID, email)
	if err != nil || before.Email == "" || before.Email == u.Email {
		return u, err
	}
	old := before.Email
	s.later(ctx, "mail telling of an email change not sent", orgID, userID, func(ctx context.Context) error {
		org, err := s.orgs.Org(ctx, orgID)
		if err != nil {
			return err
		}
		data := map[string]any{"Name": u.Name, "Org": org.Name, "OrgID": org.ID, "UserID": u.ID, "New": u.Email,
			"When": s.now().Format("Monday 2 January 2006, 15:04 MST"), "Link": s.cfg.PublicURL + "/signin"}
		if adminID != "" {
			admin, err := s.orgs.User(ctx, orgID, adminID)
			if err != nil {
				return err
			}
			data["Admin"] = admin.Name
		}
		m, err := render(emailChangedMail, data)
		if err != nil {
			return err
		}
		m.To = old
		m.Subject = "The email address of your ctalk account in " + oneLine(org.Name) + " was changed"
		return s.sender.Send(ctx, m)
	})
	return u, nil
}

// later runs send after the caller's answer, when the server sends email,
// within resetMailTimeout; a failure is logged with what.
func (s *Service) later(ctx context.Context, what, orgID, userID string, send func(context.Context) error) {
	if !s.Enabled() {
		return
	}
	s.mailing.Add(1)
	go func() {
		defer s.mailing.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resetMailTimeout)
		defer cancel()
		if err := send(ctx); err != nil {
			s.cfg.Logger.Warn(what, "org_id", orgID, "user_id", userID, "temporary", mail.Temporary(err), "error", err)
		}
	}()
}

func (s *Service) now() time.Time { return time.Now().UTC() }

// TellBreakGlass mails every other admin of orgID with an address that
// the admin adminID just signed in with the break-glass sign-in (password
// and passkey) of an org that requires single sign-on, after the caller's
// answer; a mail that fails is logged.
func (s *Service) TellBreakGlass(ctx context.Context, orgID, adminID string) {
	s.later(ctx, "mail telling of a break-glass sign-in not sent", orgID, adminID, func(ctx context.Context) error {
		admin, org, err := s.orgs.Member(ctx, orgID, adminID)
		if err != nil {
			return err
		}
		users, err := s.orgs.Users(ctx, orgID)
		if err != nil {
			return err
		}
		for _, u := range users {
			if u.Role != orgs.RoleAdmin || u.ID == adminID || u.Email == "" {
				continue
			}
			m, err := render(breakGlassMail, map[string]any{"Name": u.Name, "Admin": admin.Name, "AdminID": admin.ID, "Org": org.Name, "OrgID": org.ID,
				"When": s.now().Format("Monday 2 January 2006, 15:04 MST"), "Link": s.cfg.PublicURL + "/admin/audit"})
			if err != nil {
				return err
			}
			m.To = u.Email
			m.Subject = fmt.Sprintf("Break-glass sign-in by %s in %s", oneLine(admin.Name), oneLine(org.Name))
			if err := s.sender.Send(ctx, m); err != nil {
				return err
			}
		}
		return nil
	})
}
