package scim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/internal/reqctx"
)

// Path is where the service provider is served.
const Path = "/scim/v2"

// The schemas' URNs (RFC 7643, RFC 7644).
const (
	userSchema     = "urn:ietf:params:scim:schemas:core:2.0:User"
	groupSchema    = "urn:ietf:params:scim:schemas:core:2.0:Group"
	listSchema     = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
	errorSchema    = "urn:ietf:params:scim:api:messages:2.0:Error"
	configSchema   = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
	typeSchema     = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
	schemaSchema   = "urn:ietf:params:scim:schemas:core:2.0:Schema"
	contentType    = "application/scim+json"
	defaultCount   = 100
	maxRequestSize = 1 << 20
)

// request is one SCIM call: its org, from the token, and what it names.
type request struct {
	w      http.ResponseWriter
	r      *http.Request
	orgID  string
	token  string
	base   string
	start  time.Time
	action string
	ids    []string
}

// Handler serves /scim/v2 for every org: each call's org is its token's.
func (s *Service) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rq := &request{w: w, r: r, start: time.Now(), base: strings.TrimSuffix(reqctx.PublicURL(r.Context()), "/") + Path}
		err := s.serve(rq)
		if err != nil {
			rq.fail(s.log, err)
		}
		if rq.action != "" && rq.orgID != "" {
			s.record(rq, err)
		}
	})
}

// serve authenticates the call and routes it.
func (s *Service) serve(rq *request) error {
	ctx := rq.r.Context()
	scheme, raw, _ := strings.Cut(rq.r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(raw) == "" {
		return ctalk.Errorf(ctalk.EUnauthorized, `send the org's SCIM token as "Authorization: Bearer <token>"`)
	}
	var err error
	if rq.orgID, rq.token, err = s.authenticate(ctx, strings.TrimSpace(raw)); err != nil {
		return err
	}
	// The rest of the request acts in the token's org (see ctalk.WithOrg).
	rq.r = rq.r.WithContext(ctalk.WithOrg(ctx, rq.orgID))
	rest := strings.Trim(strings.TrimPrefix(rq.r.URL.Path, Path), "/")
	kind, id, _ := strings.Cut(rest, "/")
	method := rq.r.Method
	switch {
	case kind == "Users" && id == "" && method == http.MethodGet:
		return s.listUsers(rq)
	case kind == "Users" && id == "" && method == http.MethodPost:
		return s.createUser(rq)
	case kind == "Users" && id != "" && !strings.Contains(id, "/"):
		switch method {
		case http.MethodGet:
			return s.getUser(rq, id)
		case http.MethodPut:
			return s.replaceUser(rq, id)
		case http.MethodPatch:
			return s.patchUser(rq, id)
		case http.MethodDelete:
			return s.deleteUser(rq, id)
		}
	case kind == "Groups" && id == "" && method == http.MethodGet:
		return s.listGroups(rq)
	case kind == "Groups" && id == "" && method == http.MethodPost:
		return s.createGroup(rq)
	case kind == "Groups" && id != "" && !strings.Contains(id, "/"):
		switch method {
		case http.MethodGet:
			return s.getGroup(rq, id)
		case http.MethodPut:
			return s.replaceGroup(rq, id)
		case http.MethodPatch:
			return s.patchGroup(rq, id)
		case http.MethodDelete:
			return s.deleteGroup(rq, id)
		}
	case method != http.MethodGet:
	case kind == "ServiceProviderConfig" && id == "":
		return rq.send(http.StatusOK, serviceProviderConfig(rq.base))
	case kind == "ResourceTypes":
		return sendDiscovery(rq, id, resourceTypes(rq.base))
	case kind == "Schemas":
		return sendDiscovery(rq, id, schemas(rq.base))
	default:
		return &Error{Status: http.StatusNotFound, Detail: fmt.Sprintf("no SCIM endpoint %.60q; see %s/ResourceTypes", "/"+rest, Path)}
	}
	return &Error{Status: http.StatusMethodNotAllowed, Detail: fmt.Sprintf("%s is not served on %.60q", method, "/"+rest)}
}

// fail answers err in SCIM's error format: the service's own *Error as it
// is, a ctalk error with its status, anything else as an internal error,
// logged.
func (rq *request) fail(log *slog.Logger, err error) {
	var se *Error
	if !errors.As(err, &se) {
		code := ctalk.ErrorCode(err)
		se = &Error{Status: ctalk.HTTPStatus(code), Detail: ctalk.ErrorMessage(err)}
		switch code {
		case ctalk.EInvalid:
			se.Type = "invalidValue"
		case ctalk.EConflict:
			se.Type = "uniqueness"
			if strings.Contains(se.Detail, "last admin") {
				se.Type = "mutability"
			}
		case ctalk.EInternal:
			log.Error("scim call failed", "request_id", reqctx.ID(rq.r.Context()), "error", err)
		}
	}
	if se.Status == http.StatusUnauthorized {
		rq.w.Header().Set("WWW-Authenticate", `Bearer realm="scim"`)
	}
	body := map[string]any{"schemas": []string{errorSchema}, "status": strconv.Itoa(se.Status), "detail": se.Detail}
	if se.Type != "" {
		body["scimType"] = se.Type
	}
	rq.send(se.Status, body)
}

// send writes v as the response.
func (rq *request) send(status int, v any) error {
	rq.w.Header().Set("Content-Type", contentType)
	rq.w.WriteHeader(status)
	return json.NewEncoder(rq.w).Encode(v)
}

// record writes the audit event of a call that changed something: the
// token's id and the user touched, never a value sent.
func (s *Service) record(rq *request, err error) {
	if s.audit == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		var se *Error
		if errors.As(err, &se) {
			outcome = string(statusCode(se.Status))
		} else {
			outcome = string(ctalk.ErrorCode(err))
		}
	}
	var ids []string
	for _, id := range rq.ids {
		if ctalk.IsID(id) {
			ids = append(ids, id)
		}
	}
	s.audit.Record(audit.Event{At: rq.start.UTC(), OrgID: rq.orgID, Tool: "scim:" + rq.action, Outcome: outcome,
		DurationMS: float64(time.Since(rq.start).Microseconds()) / 1000, IDs: ids, RequestID: reqctx.ID(rq.r.Context()),
		Factor: audit.FactorSCIMToken})
}

// statusCode is the error code of an HTTP status the service answered.
func statusCode(status int) ctalk.Code {
	switch status {
	case http.StatusBadRequest:
		return ctalk.EInvalid
	case http.StatusNotFound:
		return ctalk.ENotFound
	case http.StatusConflict, http.StatusPreconditionFailed:
		return ctalk.EConflict
	case http.StatusForbidden:
		return ctalk.EForbidden
	}
	return ctalk.EInternal
}

// decode reads the JSON object of the request's body into v.
func (rq *request) decode(v any) error {
	body, err := io.ReadAll(io.LimitReader(rq.r.Body, maxRequestSize+1))
	if err != nil {
		return invalid("invalidSyntax", "the request's body could not be read")
	}
	if len(body) > maxRequestSize {
		return &Error{Status: http.StatusRequestEntityTooLarge, Detail: "the request's body is over 1 MB"}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return invalid("invalidSyntax", "the request's body is not the JSON object expected: "+ctalk.Shorten(err.Error(), 120))
	}
	return nil
}

// attrsOf reads a User resource's body: every attribute as a replace of
// its path, so that a create, a replace and a patch read values alike.
// active is true unless the body says otherwise.
func (rq *request) attrsOf() (Attrs, error) {
	var body map[string]any
	if err := rq.decode(&body); err != nil {
		return Attrs{}, err
	}
	a := Attrs{Active: true, sameActive: true}
	for k, v := range body {
		if strings.EqualFold(k, "active") {
			a.sameActive = false
		}
		switch strings.ToLower(k) {
		case "schemas", "id", "meta", "password", "groups":
			continue
		}
		if err := setPath(&a, "replace", k, v); err != nil {
			return Attrs{}, err
		}
	}
	return a, nil
}

// userResource is a User as SCIM shows it.
type userResource struct {
	Schemas    []string `json:"schemas"`
	ID         string   `json:"id"`
	ExternalID string   `json:"externalId,omitempty"`
	UserName   string   `json:"userName"`
	Name       struct {
		Formatted  string `json:"formatted,omitempty"`
		GivenName  string `json:"givenName,omitempty"`
		FamilyName string `json:"familyName,omitempty"`
	} `json:"name"`
	DisplayName string  `json:"displayName,omitempty"`
	Emails      []email `json:"emails,omitempty"`
	Active      bool    `json:"active"`
	Meta        meta    `json:"meta"`
}

type email struct {
	Value   string `json:"value"`
	Type    string `json:"type"`
	Primary bool   `json:"primary"`
}

type meta struct {
	ResourceType string `json:"resourceType"`
	Created      string `json:"created,omitempty"`
	LastModified string `json:"lastModified,omitempty"`
	Location     string `json:"location"`
	Version      string `json:"version,omitempty"`
}

func (u *User) resource(base string) *userResource {
	r := &userResource{Schemas: []string{userSchema}, ID: u.ID, ExternalID: u.ExternalID, UserName: u.UserName,
		DisplayName: u.DisplayName, Active: u.Active,
		Meta: meta{ResourceType: "User", Created: u.Created.Format(time.RFC3339), LastModified: u.Modified.Format(time.RFC3339),
			Location: base + "/Users/" + u.ID, Version: etag(u.Version)}}
	r.Name.Formatted, r.Name.GivenName, r.Name.FamilyName = u.DisplayName, u.GivenName, u.FamilyName
	if u.Email != "" {
		r.Emails = []email{{Value: u.Email, Type: "work", Primary: true}}
	}
	return r
}

func (s *Service) getUser(rq *request, id string) error {
	u, err := s.Get(rq.r.Context(), rq.orgID, id)
	if err != nil {
		return err
	}
	return rq.sendUser(http.StatusOK, u)
}

func (s *Service) listUsers(rq *request) error {
	q := rq.r.URL.Query()
	f, start, count, perr := listParams(q, "userName", "externalId", "id")
	if perr != nil {
		return perr
	}
	users, total, lerr := s.List(rq.r.Context(), rq.orgID, f, start, count)
	if lerr != nil {
		return lerr
	}
	resources := make([]*userResource, len(users))
	for i, u := range users {
		resources[i] = u.resource(rq.base)
	}
	return rq.send(http.StatusOK, map[string]any{"schemas": []string{listSchema}, "totalResults": total,
		"startIndex": start, "itemsPerPage": len(resources), "Resources": resources})
}

// listParams reads a list's filter, on one of attrs, and its page: its
// startIndex (from 1) and count (at most MaxCount).
func listParams(q url.Values, attrs ...string) (*Filter, int, int, error) {
	f, ferr := parseFilter(q.Get("filter"), attrs...)
	if ferr != nil {
		return nil, 0, 0, ferr
	}
	start, err := intParam(q.Get("startIndex"), 1)
	if err != nil {
		return nil, 0, 0, err
	}
	count, err := intParam(q.Get("count"), defaultCount)
	if err != nil {
		return nil, 0, 0, err
	}
	return f, max(start, 1), min(max(count, 0), MaxCount), nil
}

// intParam reads a non-negative whole number of a query, def when absent.
func intParam(s string, def int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, invalid("invalidValue", fmt.Sprintf("%.20q is not a whole number; startIndex and count are whole numbers", s))
	}
	return n, nil
}

func (s *Service) createUser(rq *request) error {
	rq.action = "create_user"
	a, err := rq.attrsOf()
	if err != nil {
		return err
	}
	u, err := s.Create(rq.r.Context(), rq.orgID, a)
	if err != nil {
		return err
	}
	rq.ids = []string{u.ID}
	rq.w.Header().Set("Location", rq.base+"/Users/"+u.ID)
	return rq.sendUser(http.StatusCreated, u)
}

// sendUser writes u as the response, with its version as the ETag.
func (rq *request) sendUser(status int, u *User) error {
	rq.w.Header().Set("ETag", etag(u.Version))
	return rq.send(status, u.resource(rq.base))
}

// etag is the entity tag of a resource's version: weak, since the
// resource is written anew from what ctalk holds.
func etag(version int) string { return fmt.Sprintf(`W/"%d"`, version) }

// precondition is the write's If-Match: nil without the header (the write
// is not checked), else the versions it names ("*" names any). The service
// checks it in the write's own transaction, so that a write between the
// identity provider's read and this one fails it.
func (rq *request) precondition() Precondition {
	h := strings.TrimSpace(rq.r.Header.Get("If-Match"))
	if h == "" {
		return nil
	}
	tags := strings.Split(h, ",")
	return func(version int) bool {
		cur := strings.TrimPrefix(etag(version), "W/")
		for _, t := range tags {
			if t = strings.TrimSpace(t); t == "*" || strings.TrimPrefix(t, "W/") == cur {
				return true
			}
		}
		return false
	}
}

func (s *Service) replaceUser(rq *request, id string) error {
	rq.action, rq.ids = "replace_user", []string{id}
	a, err := rq.attrsOf()
	if err != nil {
		return err
	}
	u, err := s.Replace(rq.r.Context(), rq.orgID, id, a, rq.precondition())
	if err != nil {
		return err
	}
	return rq.sendUser(http.StatusOK, u)
}

func (s *Service) patchUser(rq *request, id string) error {
	rq.action, rq.ids = "patch_user", []string{id}
	ops, err := rq.operations()
	if err != nil {
		return err
	}
	u, err := s.Patch(rq.r.Context(), rq.orgID, id, ops, rq.precondition())
	if err != nil {
		return err
	}
	return rq.sendUser(http.StatusOK, u)
}

// operations reads a PATCH request's body: its Operations.
func (rq *request) operations() ([]Op, error) {
	var body struct {
		Operations []Op `json:"Operations"`
	}
	if err := rq.decode(&body); err != nil {
		return nil, err
	}
	if len(body.Operations) == 0 {
		return nil, invalid("invalidSyntax", "Operations is required: a list of {op, path, value}")
	}
	return body.Operations, nil
}

func (s *Service) deleteUser(rq *request, id string) error {
	rq.action, rq.ids = "delete_user", []string{id}
	if err := s.Delete(rq.r.Context(), rq.orgID, id, rq.precondition()); err != nil {
		return err
	}
	rq.w.WriteHeader(http.StatusNoContent)
	return nil
}
