package web

// mountAsked adds the routes of the app's asked section: my questions, their status and answers, and withdrawing one.
func (p *Pages) mountAsked(r routes) {}
