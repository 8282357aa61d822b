package mail

import (
	"bytes"
	"fmt"
	htmltemplate "html/template"
	"strings"
	"text/template"
	"text/template/parse"
	"unicode"
)

// OneLine is s as one line: every run of white space, line breaks and
// Unicode line and paragraph separators among them, becomes one space, and
// every other control character goes. What people write (their names, an
// org's) is printed with it wherever a mail shows it, so that no value can
// start a line of its own (a forged "Reset your password: https://...")
// or a header.
func OneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// Quoted is text of several lines that a template shows as a quote, with
// quote: the only value a mail template prints on more than one line.
type Quoted string

// quotedText is what quote made of a Quoted: printed as it is.
type quotedText string

// quoteLines is the text of q as a quote of the text part: each line
// starts with "> ", so that no line of it passes for the mail's own.
func quoteLines(q Quoted) quotedText {
	var b strings.Builder
	for _, line := range quoteSplit(string(q)) {
		b.WriteString("> " + line + "\n")
	}
	return quotedText(strings.TrimSuffix(b.String(), "\n"))
}

// quoteBlock is the text of q for the HTML part, inside an element that
// keeps its line breaks: each line OneLine's, the breaks plain line feeds.
func quoteBlock(q Quoted) quotedText {
	return quotedText(strings.Join(quoteSplit(string(q)), "\n"))
}

// quoteSplit splits s into its lines at any line break (CR LF, CR, LF and
// the Unicode line and paragraph separators), each made OneLine.
func quoteSplit(s string) []string {
	s = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u2028", "\n", "\u2029", "\n", "\u0085", "\n", "\v", "\n", "\f", "\n").Replace(strings.TrimSpace(s))
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = OneLine(l)
	}
	return lines
}

// flat is the function every action of a Template's text ends with: the
// value printed as text/template prints it, then OneLine, but for what
// quote made.
func flat(v any) string {
	switch v := v.(type) {
	case quotedText:
		return string(v)
	case Quoted:
		return OneLine(string(v))
	}
	return OneLine(fmt.Sprint(v))
}

// flatAll appends flat to every action of the tree under n: what prints a
// value (an {{.Name}}), not what decides (the pipelines of if, range and
// with are left as they are).
func flatAll(tree *parse.Tree, n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			flatAll(tree, c)
		}
	case *parse.ActionNode:
		if len(n.Pipe.Decl) > 0 {
			return // {{$x := ...}} prints nothing
		}
		n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos,
			Args: []parse.Node{parse.NewIdentifier("mailflat").SetTree(tree).SetPos(n.Pos)}})
	case *parse.IfNode:
		flatAll(tree, n.List)
		flatAll(tree, n.ElseList)
	case *parse.RangeNode:
		flatAll(tree, n.List)
		flatAll(tree, n.ElseList)
	case *parse.WithNode:
		flatAll(tree, n.List)
		flatAll(tree, n.ElseList)
	}
}

// Template is a mail's text and HTML parts, each from a template whose
// every printed value is made one line (OneLine) before the HTML part
// escapes it: a template written later needs nothing to be safe. A value
// of several lines is shown only through quote, on a Quoted value: in the
// text part each of its lines starts with "> ", in the HTML part it keeps
// its breaks for an element styled to show them.
type Template struct {
	text *template.Template
	html *htmltemplate.Template
}

// NewTemplate parses text and html, the two parts of a mail; it panics on
// a template that does not parse, as template.Must does.
func NewTemplate(text, html string) *Template {
	t := template.Must(template.New("text").Funcs(template.FuncMap{"mailflat": flat, "quote": quoteLines}).Parse(text))
	for _, d := range t.Templates() {
		if d.Tree != nil {
			flatAll(d.Tree, d.Tree.Root)
		}
	}
	h := htmltemplate.Must(htmltemplate.New("html").Funcs(htmltemplate.FuncMap{"mailflat": flat, "quote": quoteBlock}).Parse(html))
	for _, d := range h.Templates() {
		if d.Tree != nil {
			flatAll(d.Tree, d.Tree.Root)
		}
	}
	return &Template{text: t, html: h}
}

// Render is the message of data: its Text and HTML parts.
func (t *Template) Render(data any) (Message, error) {
	var text, html bytes.Buffer
	if err := t.text.Execute(&text, data); err != nil {
		return Message{}, fmt.Errorf("render mail: %w", err)
	}
	if err := t.html.Execute(&html, data); err != nil {
		return Message{}, fmt.Errorf("render mail: %w", err)
	}
	return Message{Text: text.String(), HTML: html.String()}, nil
}
