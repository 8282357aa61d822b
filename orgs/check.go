package orgs

import (
	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
)

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
	if org.Name, err = ctalk.Text("name", in.Name, MaxNameLen, true); err != nil {
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
	u.Name, err = ctalk.Text("name", in.Name, MaxNameLen, true)
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
