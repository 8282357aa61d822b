package web

// Icon is the server's icon, an SVG: the favicon of its pages, which the
// MCP server info and the server card show too.
func Icon() []byte {
	b, err := staticFS.ReadFile("static/favicon.svg")
	if err != nil {
		panic("web: the embedded favicon is missing: " + err.Error())
	}
	return b
}
