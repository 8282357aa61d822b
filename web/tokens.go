package web

// mountTokens adds the routes of the app's tokens section: every client connected as me (OAuth grants, login and personal tokens, browser sessions), revoking them, and new personal tokens.
func (p *Pages) mountTokens(r routes) {}
