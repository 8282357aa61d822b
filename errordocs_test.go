package ctalk_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// serviceTypes are the types, by package, whose exported methods are the
// services' contracts.
var serviceTypes = map[string]string{
	"orgs": "Service", "inbox": "Service", "knowledge": "Service", "channels": "Service", "auth": "Service",
	"oauth": "Service", "audit": "Log", "wait": "Broker", "db": "DB",
	"notify": "Service", "access": "Service", "usecase": "Answers",
}

// errorsDocumented matches a doc comment that says what its method
// returns on failure: the codes, the oauth package's *Error, another
// method's errors, or that only the database's can occur.
var errorsDocumented = regexp.MustCompile(`(?s)\bReturns\b(?:[^.]|\.\S)*(\bE[A-Z][a-zA-Z]+\b|\*Error\b|\bthe errors of\b|\bonly the database's errors\b|\bno error code\b|translated into codes)`)

// undocumentedErrors returns, as "file: Type.Method", the exported methods
// of the service types in the production code of dir that return an error
// and whose doc comment does not say which.
func undocumentedErrors(t *testing.T, dir, typ string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() || !returnsError(fd.Type) || receiverName(fd) != typ {
				continue
			}
			if !errorsDocumented.MatchString(fd.Doc.Text()) {
				out = append(out, fset.Position(fd.Pos()).String()+": "+typ+"."+fd.Name.Name)
			}
		}
	}
	return out
}

func receiverName(fd *ast.FuncDecl) string {
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func returnsError(ft *ast.FuncType) bool {
	if ft.Results == nil {
		return false
	}
	for _, r := range ft.Results.List {
		if id, ok := r.Type.(*ast.Ident); ok && id.Name == "error" {
			return true
		}
	}
	return false
}

// TestServiceMethodsDocumentErrors holds the rule that a service method's
// doc comment names the error codes it returns.
func TestServiceMethodsDocumentErrors(t *testing.T) {
	n := 0
	for dir, typ := range serviceTypes {
		for _, m := range undocumentedErrors(t, dir, typ) {
			n++
			t.Errorf("%s returns an error, but its doc comment does not say which: add a paragraph such as \"Returns ENotFound when ...\" naming each code it returns, or \"Returns only the database's errors.\" when it returns no code of its own", m)
		}
	}
	if n > 0 {
		t.Logf("%d methods to document", n)
	}
}

// TestErrorsDocumentedCatches shows the rule's pattern telling a documented
// method from one that is not.
func TestErrorsDocumentedCatches(t *testing.T) {
	for doc, want := range map[string]bool{
		"Get returns a thing.\n\nReturns ENotFound when it is gone.\n":      true,
		"Get returns a thing.\n\nReturns only the database's errors.\n":     true,
		"SignIn signs in.\n\nReturns the errors of CheckPassword.\n":        true,
		"Token answers.\n\nReturns *Error for every refusal.\n":             true,
		"Get returns a thing.\n":                                            false,
		"Get returns a thing. It returns nothing else.\n":                   false,
		"Get returns a thing; the Errors of the world are not its concern.": false,
	} {
		if got := errorsDocumented.MatchString(doc); got != want {
			t.Errorf("errorsDocumented(%q) = %v, want %v", doc, got, want)
		}
	}
}
