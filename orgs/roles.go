package orgs

// Roles a user holds in their organization. The auth package, which orgs
// imports and so cannot import orgs, compares a session's role with
// RoleAdmin's value in Session.IsAdmin.
const (
	RoleMember = "member"
	RoleAdmin  = "admin"
)
