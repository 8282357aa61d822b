package ctalk

// Caller is who calls a service operation: a user of an organization, taken
// from their credential (never from a tool's arguments), and whether they
// administer it. Every service method that acts as someone takes one; a
// method that acts on another member (an admin removing a user, say) takes
// that member's id besides.
type Caller struct {
	OrgID  string
	UserID string
	Admin  bool
}
