package web

// mountPeople adds the routes of the app's people section: the org directory, each profile with our history, my own notes and password.
func (p *Pages) mountPeople(r routes) {}
