package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/knowledge"
	"github.com/ctalk/ctalk/orgs"
)

// mountPeople adds the routes of the app's people section: the org
// directory, each profile with our history, my own notes and password, and
// the profile notes admins write.
func (p *Pages) mountPeople(r routes) {
	r.GET("/people", p.directory)
	r.GET("/people/:user_id", p.profile)
	r.POST("/people/:user_id/profile-notes", p.profileNotesSubmit)
	r.GET("/profile", p.myProfile)
	r.POST("/profile/notes", p.myNotesSubmit)
	r.POST("/profile/password", p.passwordSubmit)
	r.POST("/profile/email", p.myEmailSubmit)
}

// profileHistory is how many of our latest questions a profile shows.
const profileHistory = 10

// directoryNotes is how much of a person's notes the directory shows.
const directoryNotes = 280

// peopleFlash is what the people section's actions did, by done key.
var peopleFlash = map[string]string{
	"notes":            "Your notes are saved. Coworkers' agents see them from now on.",
	"profile-notes":    "The profile notes are saved. Coworkers' agents see them from now on.",
	"email":            "Your email address is saved.",
	"reset":            "Your new password is set. Every other browser and every agent signed in as you was signed out; connect your agents again.",
	"password":         "Your password is changed. Every agent and other browser signed in as you was signed out; this browser stays signed in.",
	"passkey-added":    passkeysFlash["passkey-added"],
	"passkey-removed":  passkeysFlash["passkey-removed"],
	"passkey-required": passkeysFlash["passkey-required"],
	// passkeys.go's
	"passkey-pending":       passkeysFlash["passkey-pending"],
	"passkey-verified":      passkeysFlash["passkey-verified"],
	"passkey-pending-admin": passkeysFlash["passkey-pending-admin"],
	// route.go's
	"away": "You are away. Coworkers' agents are told so, with your delegate, and your notifications stop until then.",
	"back": "Welcome back. You are no longer away; notifications reach you again.",
}

// directoryEntry is one member in the directory.
type directoryEntry struct {
	*orgs.User
	// Notes is the start of the member's notes.
	Notes string
	Me    bool
}

// directoryData is the People page: everyone, and who knows about the
// topic searched, if any.
type directoryData struct {
	Entries []directoryEntry
	Topic   string
	Experts []*knowledge.Expert
	// Error says why the topic could not be searched.
	Error string
}

func (p *Pages) directory(c echo.Context) error {
	ctx, m := c.Request().Context(), me(c)
	users, err := p.orgs.Users(ctx, m.OrgID)
	if err != nil {
		return err
	}
	d := directoryData{Entries: make([]directoryEntry, len(users)), Topic: strings.TrimSpace(c.QueryParam("topic"))}
	for i, u := range users {
		d.Entries[i] = directoryEntry{User: u, Notes: ctalk.Shorten(u.Notes, directoryNotes), Me: u.ID == m.UserID}
	}
	status := http.StatusOK
	if d.Topic != "" {
		d.Experts, err = p.knowledge.Experts(ctx, m.Caller(), d.Topic, knowledge.MaxLimit)
		if ctalk.ErrorCode(err) == ctalk.EInvalid {
			d.Error, err, status = ctalk.ErrorMessage(err), nil, http.StatusBadRequest
		}
		if err != nil {
			return err
		}
	}
	return p.app(c, status, "people", &page{Section: "people", Title: "People", Data: d})
}

// profileData is a profile page: another member's, or mine.
type profileData struct {
	User *orgs.User
	// History is ours; nil on my own profile.
	History *inbox.Conversation
	// CanEditProfileNotes is true for admins.
	CanEditProfileNotes bool
	// Form holds what was typed into a form that failed, by field; Errors
	// say why, by field.
	Form, Errors map[string]string
	MaxNotes     int
	// Passkeys are mine, on my own profile.
	Passkeys       []auth.Passkey
	MaxPasskeyName int
	// Confirmed counts my passkeys that sign in and verify; MustVerify
	// says that adding another needs a fresh verification with one of
	// them first. PasskeyFactor says whether my org's approval_factor is
	// passkey (changing my address then needs a passkey verification).
	Confirmed     int
	MustVerify    bool
	PasskeyFactor bool
}

// profile shows a current member of my org and our history. Anyone else,
// a former member, or a member of another org, is "not found", as the
// get_user_profile tool says.
func (p *Pages) profile(c echo.Context) error {
	m := me(c)
	if c.Param("user_id") == m.UserID {
		return c.Redirect(http.StatusSeeOther, "/profile")
	}
	return p.renderProfile(c, http.StatusOK, c.Param("user_id"), nil, nil)
}

func (p *Pages) renderProfile(c echo.Context, status int, userID string, form, errs map[string]string) error {
	ctx, m := c.Request().Context(), me(c)
	u, err := p.orgs.User(ctx, m.OrgID, userID)
	if err != nil {
		return p.peopleError(c, err)
	}
	data := profileData{User: u, CanEditProfileNotes: m.IsAdmin(), Form: form, Errors: errs, MaxNotes: orgs.MaxNotesLen}
	if u.ID != m.UserID {
		if data.History, err = p.inbox.Between(ctx, m.Caller(), u.ID, profileHistory); err != nil {
			return err
		}
	}
	name, title := "profile", u.Name
	if u.ID == m.UserID {
		name, title = "profile-mine", "Your profile"
		if data.Passkeys, err = p.auth.Passkeys(ctx, m.OrgID, m.UserID); err != nil {
			return err
		}
		data.MaxPasskeyName = auth.MaxPasskeyNameLen
		data.Confirmed = confirmed(data.Passkeys)
		data.MustVerify = data.Confirmed > 0 && !m.PasskeyVerifiedRecently(time.Now())
		org, err := p.orgs.Org(ctx, m.OrgID)
		if err != nil {
			return err
		}
		data.PasskeyFactor = org.ApprovalFactor == orgs.FactorPasskey
	}
	return p.app(c, status, name, &page{Section: "people", Title: title, Flash: flash(c, peopleFlash), Data: data})
}

// peopleError shows a refusal of the people section on a page of its own;
// an internal error goes to the server's error handler.
func (p *Pages) peopleError(c echo.Context, err error) error {
	code := ctalk.ErrorCode(err)
	switch code {
	case ctalk.EInternal:
		return err
	case ctalk.ENotFound, ctalk.EInvalid:
		// A malformed id names no one either.
		return p.peopleMessage(c, http.StatusNotFound, "people", "Person not found",
			"No one with that user id is in your organization. People lists everyone who is.")
	}
	return p.peopleMessage(c, ctalk.HTTPStatus(code), "people", "Not changed", ctalk.ErrorMessage(err))
}

// myProfile is my own profile: my notes and my password.
func (p *Pages) myProfile(c echo.Context) error {
	return p.renderProfile(c, http.StatusOK, me(c).UserID, nil, nil)
}

// myNotesSubmit replaces my own notes, under the rules of update_my_notes.
func (p *Pages) myNotesSubmit(c echo.Context) error {
	m := me(c)
	notes := c.FormValue("notes")
	if _, err := p.orgs.SetNotes(c.Request().Context(), m.Caller(), notes); err != nil {
		return p.profileFormError(c, m.UserID, "notes", map[string]string{"notes": notes}, err)
	}
	return done(c, "/profile", "notes")
}

// profileNotesSubmit replaces the notes an admin writes on a member's
// profile, under the rules of update_user_profile_notes: admins only.
func (p *Pages) profileNotesSubmit(c echo.Context) error {
	m, userID := me(c), c.Param("user_id")
	if !m.IsAdmin() {
		return p.peopleMessage(c, http.StatusForbidden, "people", "Admins only",
			"Only an admin of your organization can edit a person's profile notes, so nothing was changed. You can edit your own notes on your profile.")
	}
	notes := c.FormValue("profile_notes")
	u, err := p.orgs.SetProfileNotes(c.Request().Context(), m.OrgID, userID, notes)
	if err != nil {
		return p.profileFormError(c, userID, "profile_notes", map[string]string{"profile_notes": notes}, err)
	}
	if u.ID == m.UserID {
		return done(c, "/profile", "profile-notes")
	}
	return done(c, "/people/"+u.ID, "profile-notes")
}

// passwordSubmit changes my password, under the rules of change_password:
// every other credential of mine is revoked, and this browser's session is
// the one kept.
func (p *Pages) passwordSubmit(c echo.Context) error {
	m := me(c)
	_, err := p.auth.ChangePassword(c.Request().Context(), m, c.FormValue("current_password"), c.FormValue("new_password"))
	if err == nil {
		return done(c, "/profile", "password")
	}
	field, msg := "current_password", ctalk.ErrorMessage(err)
	switch ctalk.ErrorCode(err) {
	case ctalk.EUnauthorized:
		msg = "This is not your current password. Nothing was changed."
	case ctalk.EInvalid:
		field = "new_password"
	case ctalk.EConflict:
		msg = "Your password was changed elsewhere just now. Type the password you use now and try again."
	}
	return p.profileFormError(c, m.UserID, field, nil, ctalk.Errorf(ctalk.ErrorCode(err), "%s", msg))
}

// profileFormError shows the profile again with what was typed and the
// error next to the field it concerns; a person not found (or a malformed
// id) is a page of its own.
func (p *Pages) profileFormError(c echo.Context, userID, field string, form map[string]string, err error) error {
	code := ctalk.ErrorCode(err)
	if code == ctalk.EInternal || code == ctalk.ENotFound || (code == ctalk.EInvalid && !ctalk.IsID(userID)) {
		return p.peopleError(c, err)
	}
	return p.renderProfile(c, ctalk.HTTPStatus(code), userID, form, map[string]string{field: ctalk.ErrorMessage(err)})
}

// myEmailSubmit sets or clears my email address, where reset links' mails
// go, after a fresh verification (see reverify), and tells the address it
// replaces.
func (p *Pages) myEmailSubmit(c echo.Context) error {
	start, m := time.Now(), me(c)
	email := c.FormValue("email")
	askPasskey, err := p.reverify(c, c.FormValue("current_password"))
	if askPasskey {
		return p.stepUp(c, http.StatusUnauthorized, "Your organization asks for a passkey before an approval, so changing your email address, where reset links go, takes a passkey verification too. Nothing was changed yet: verify with your passkey, and your address is saved.",
			c.Request().URL.Path, replayed(c), "")
	}
	if err == nil {
		if _, err = p.access.ChangeEmail(c.Request().Context(), m.OrgID, m.UserID, email, ""); err == nil {
			p.tellSecurity(c.Request().Context(), m.OrgID, m.UserID, "The email address where your password reset links go was changed.")
		}
	}
	p.recordAction(c, "web:set_my_email", start, err)
	if ctalk.ErrorCode(err) == ctalk.EUnauthorized {
		err = ctalk.Errorf(ctalk.EUnauthorized, "this is not your password; type the password you sign in with to change your address. Nothing was changed")
	}
	if err != nil {
		return p.profileFormError(c, m.UserID, "email", map[string]string{"email": email}, err)
	}
	return done(c, "/profile", "email")
}

// reverify is the fresh verification that changing an email address (where
// reset links go) needs of the person signed in: where their org's
// approval_factor is passkey, a passkey verification of the last
// auth.PasskeyFresh, as an approval needs (askPasskey when there is none:
// the caller asks for one); elsewhere that, or their own password, checked
// under the rules of sign-in.
func (p *Pages) reverify(c echo.Context, password string) (askPasskey bool, err error) {
	ctx, m := c.Request().Context(), me(c)
	if m.PasskeyVerifiedRecently(time.Now()) {
		return false, nil
	}
	org, err := p.orgs.Org(ctx, m.OrgID)
	if err != nil {
		return false, err
	}
	if org.ApprovalFactor == orgs.FactorPasskey {
		return true, nil
	}
	if password == "" {
		return false, ctalk.Errorf(ctalk.EUnauthorized, "type your password to confirm the change; nothing was changed")
	}
	_, err = p.auth.CheckPassword(ctx, m.OrgID, m.UserID, password, c.RealIP())
	return false, err
}
