package web

// mountLive adds the routes of the app's live section: the Server-Sent Events stream that updates open pages without a reload.
func (p *Pages) mountLive(r routes) {}
