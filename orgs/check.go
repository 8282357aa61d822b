package orgs

import (
	"unicode"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
)

// checkName checks a person's or an organization's name, field naming it in the
// error: text as ctalk.Text takes it, required, at most MaxNameLen
// characters, and one line: no line break, tab or other control character,
// nor a Unicode line or paragraph separator. A name is shown inside other
// text (a mail's lines and subject, a notification's title), where a line
// break would let it pass for a line of its own.
//
// Returns EInvalid.
func checkName(field, s string) (string, error) {
	s, err := ctalk.Text(field, s, MaxNameLen, true)
	if err != nil {
		return "", err
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			what := "a control character"
			switch r {
			case '\n', '\r', '\u2028', '\u2029', '\u0085', '\v', '\f':
				what = "a line break"
			case '\t':
				what = "a tab"
			}
			return "", ctalk.Errorf(ctalk.EInvalid, "%s contains %s (U+%04X); a name is one line of text, so remove it", field, what, r)
		}
	}
	return s, nil
}

// FieldError is a mistake in one field of an input, named as the tools
// name their arguments.
type FieldError struct {
	Field string
	Err   error
}

// Check returns the mistakes in a new organization under the rules of
// Register, field by field (org_id, name, admin_password), without reading
// the database: a sign-up form shows each next to its field before
// anything is created. Every Err is EInvalid.
func (in NewOrg) Check() []FieldError {
	_, errs := in.clean()
	return errs
}

// clean returns the organization in describes, normalized, and the
// mistakes in its fields, in the order Register reports them.
func (in NewOrg) clean() (*Org, []FieldError) {
	var errs []FieldError
	org := &Org{ApprovalMode: ApprovalAgent, ChannelPostMode: ChannelPostAgent, AgentPasswordLogin: AgentLoginAllowed}
	var err error
	if org.ID, err = ctalk.ParseID("org_id", in.ID); err != nil {
		errs = append(errs, FieldError{"org_id", err})
	}
	if org.Name, err = checkName("name", in.Name); err != nil {
		errs = append(errs, FieldError{"name", err})
	}
	if err := auth.ValidatePassword("admin_password", in.AdminPassword, auth.MinAdminPasswordLen); err != nil {
		errs = append(errs, FieldError{"admin_password", err})
	}
	switch in.ApprovalMode {
	case "", ApprovalAgent:
	case ApprovalHuman:
		org.ApprovalMode = ApprovalHuman
	default:
		errs = append(errs, FieldError{"approval_mode", ctalk.Errorf(ctalk.EInvalid, "approval_mode is not valid; use \"agent\" or \"human\"")})
	}
	return org, errs
}

// Check returns the mistakes in a new user under the rules of AddUser,
// field by field (user_id, name, role, ownership, notes, password), without
// reading the database. Every Err is EInvalid.
func (in NewUser) Check() []FieldError {
	_, errs := in.clean()
	return errs
}

// clean returns the user in describes, normalized, and the mistakes in its
// fields, in the order AddUser reports them.
func (in NewUser) clean() (*User, []FieldError) {
	var errs []FieldError
	add := func(field string, err error) {
		if err != nil {
			errs = append(errs, FieldError{field, err})
		}
	}
	u := &User{Role: in.Role}
	var err error
	u.ID, err = ctalk.ParseID("user_id", in.ID)
	add("user_id", err)
	u.Name, err = checkName("name", in.Name)
	add("name", err)
	if u.Role == "" {
		u.Role = RoleMember
	}
	if u.Role != RoleMember && u.Role != RoleAdmin {
		add("role", ctalk.Errorf(ctalk.EInvalid, "role %.40q is not valid; use \"member\" or \"admin\"", in.Role))
	}
	u.Ownership, err = cleanOwnership(in.Ownership)
	add("ownership", err)
	u.Notes, err = ctalk.Text("notes", in.Notes, MaxNotesLen, false)
	add("notes", err)
	if in.Email != "" {
		u.Email, err = ctalk.ParseEmail("email", in.Email)
		add("email", err)
	}
	add("password", auth.ValidatePassword("password", in.Password, auth.MinUserPasswordLen))
	return u, errs
}
