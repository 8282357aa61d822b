package scim

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Error is a refusal in SCIM's terms (RFC 7644 section 3.12): the HTTP
// status, the scimType where the RFC names one, and a detail a person can
// act on.
type Error struct {
	Status int
	Type   string
	Detail string
}

func (e *Error) Error() string { return e.Detail }

func invalid(scimType, detail string) *Error {
	return &Error{Status: 400, Type: scimType, Detail: detail}
}

// Op is one operation of a PATCH request. Microsoft Entra ID's forms are
// taken as well as RFC 7644's: op in any case ("Replace"), a value object
// without a path whose keys are paths ("name.givenName"), and booleans as
// strings ("False").
type Op struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value"`
}

// parse reads the operation's op, in lower case, and its value.
func (o Op) parse() (string, any, *Error) {
	op := strings.ToLower(strings.TrimSpace(o.Op))
	switch op {
	case "add", "replace", "remove":
	default:
		return "", nil, invalid("invalidSyntax", fmt.Sprintf("op %.20q is not add, replace or remove", o.Op))
	}
	var v any
	if len(o.Value) > 0 {
		if err := json.Unmarshal(o.Value, &v); err != nil {
			return "", nil, invalid("invalidSyntax", "value is not JSON")
		}
	}
	return op, v, nil
}

// apply applies the operation to a.
func (o Op) apply(a *Attrs) *Error {
	op, v, err := o.parse()
	if err != nil {
		return err
	}
	if strings.TrimSpace(o.Path) == "" {
		return eachAttr(op, v, func(op, path string, v any) *Error { return setPath(a, op, path, v) })
	}
	return setPath(a, op, o.Path, v)
}

// eachAttr applies an operation without a path: its value is an object
// whose keys are paths, each set by set.
func eachAttr(op string, v any, set func(op, path string, v any) *Error) *Error {
	if op == "remove" {
		return invalid("noTarget", "a remove needs a path")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return invalid("invalidSyntax", "an operation without a path needs a value object of attributes")
	}
	for k, kv := range obj {
		if err := set(op, k, kv); err != nil {
			return err
		}
	}
	return nil
}

// corePrefix and groupPrefix start the full path of a core User or Group
// attribute.
const (
	corePrefix  = "urn:ietf:params:scim:schemas:core:2.0:user:"
	groupPrefix = "urn:ietf:params:scim:schemas:core:2.0:group:"
)

// filterPath is the pattern of a path that names the values of attr with
// a value filter, attr[value eq "..."], capturing the quoted value.
func filterPath(attr string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)^` + attr + `\[\s*value\s+eq\s+("(?:[^"\\]|\\.)*")\s*\]$`)
}

// emailPath is an address's path with a value filter:
// emails[type eq "work"].value, emails[primary eq true].value.
var emailPath = regexp.MustCompile(`^emails\[[^\]]*\](\.value)?$`)

// setPath applies one attribute's operation. Attributes ctalk does not
// keep (phone numbers, titles, the enterprise extension) are accepted and
// ignored, so that an identity provider's default mapping does not fail.
func setPath(a *Attrs, op, path string, v any) *Error {
	p := strings.ToLower(strings.TrimSpace(path))
	p = strings.TrimPrefix(p, corePrefix)
	remove := op == "remove"
	str := func(dst *string) *Error {
		if remove {
			*dst = ""
			return nil
		}
		s, ok := v.(string)
		if !ok {
			return invalid("invalidValue", fmt.Sprintf("%s must be a string", path))
		}
		*dst = s
		return nil
	}
	switch {
	case p == "active":
		return setActive(a, remove, v)
	case p == "username":
		if remove {
			return invalid("mutability", "userName is required and cannot be removed")
		}
		return str(&a.UserName)
	case p == "externalid":
		return str(&a.ExternalID)
	case p == "displayname":
		return str(&a.DisplayName)
	case p == "name.givenname":
		return str(&a.GivenName)
	case p == "name.familyname":
		return str(&a.FamilyName)
	case p == "name.formatted":
		return str(&a.Formatted)
	case p == "name":
		return setName(a, op, v)
	case p == "emails" || p == "emails.value" || emailPath.MatchString(p):
		return setEmail(a, remove, v)
	}
	return nil
}

// setActive applies an operation on active, which may be replaced only.
func setActive(a *Attrs, remove bool, v any) *Error {
	if remove {
		return invalid("mutability", "active cannot be removed; replace it with true or false")
	}
	b, ok := boolean(v)
	if !ok {
		return invalid("invalidValue", "active must be true or false")
	}
	a.Active = b
	return nil
}

// setName applies an operation on the whole name, an object of its parts.
func setName(a *Attrs, op string, v any) *Error {
	if op == "remove" {
		a.GivenName, a.FamilyName, a.Formatted = "", "", ""
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return invalid("invalidValue", "name must be an object")
	}
	for k, kv := range obj {
		if err := setPath(a, op, "name."+k, kv); err != nil {
			return err
		}
	}
	return nil
}

// setEmail applies an operation on the address: a string, or the emails
// list or one of its entries (see emailOf).
func setEmail(a *Attrs, remove bool, v any) *Error {
	if remove {
		a.Email = ""
		return nil
	}
	if s, ok := v.(string); ok {
		a.Email = s
		return nil
	}
	e, err := emailOf(v)
	if err != nil {
		return err
	}
	a.Email = e
	return nil
}

// boolean reads a JSON boolean, or a string "true" or "false" in any case
// (Entra's form).
func boolean(v any) (bool, bool) {
	switch b := v.(type) {
	case bool:
		return b, true
	case string:
		switch strings.ToLower(strings.TrimSpace(b)) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}

// emailOf picks the member's address from emails (an array of
// {value, type, primary}, or one such object): the primary one, else a
// work one, else the first.
func emailOf(v any) (string, *Error) {
	var list []any
	switch e := v.(type) {
	case []any:
		list = e
	case map[string]any:
		list = []any{e}
	case nil:
		return "", nil
	default:
		return "", invalid("invalidValue", "emails must be a list of objects with a value")
	}
	pick, rank := "", -1
	for _, item := range list {
		obj, ok := item.(map[string]any)
		if !ok {
			return "", invalid("invalidValue", "emails must be a list of objects with a value")
		}
		value, _ := obj["value"].(string)
		if value == "" {
			continue
		}
		r := 0
		if t, _ := obj["type"].(string); strings.EqualFold(t, "work") {
			r = 1
		}
		if p, _ := boolean(obj["primary"]); p {
			r = 2
		}
		if r > rank {
			pick, rank = value, r
		}
	}
	return pick, nil
}

// filterRe is the one filter form served: attribute eq "value".
var filterRe = regexp.MustCompile(`(?i)^\s*([a-z.:0-9]+)\s+eq\s+("(?:[^"\\]|\\.)*")\s*$`)

// parseFilter reads a list's filter: one of attrs (userName, externalId or
// id for Users; displayName, externalId or id for Groups), eq, and a
// quoted value, as Okta and Entra send them.
func parseFilter(f string, attrs ...string) (*Filter, *Error) {
	if strings.TrimSpace(f) == "" {
		return nil, nil
	}
	names := strings.Join(attrs[:len(attrs)-1], ", ") + " or " + attrs[len(attrs)-1]
	m := filterRe.FindStringSubmatch(f)
	if m == nil {
		return nil, invalid("invalidFilter", fmt.Sprintf(`the filter must be one comparison: %s, eq, and a quoted value, such as %s eq "jane@example.com"`, names, attrs[0]))
	}
	var value string
	if err := json.Unmarshal([]byte(m[2]), &value); err != nil {
		return nil, invalid("invalidFilter", "the filter's value is not a well-formed quoted string")
	}
	attr := strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(m[1]), corePrefix), groupPrefix)
	for _, a := range attrs {
		if strings.EqualFold(a, attr) {
			return &Filter{Attr: a, Value: value}, nil
		}
	}
	return nil, invalid("invalidFilter", fmt.Sprintf("filtering by %.40q is not supported; filter by %s", m[1], names))
}
