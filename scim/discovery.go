package scim

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The discovery endpoints (RFC 7644 section 4): /ServiceProviderConfig,
// /ResourceTypes and /Schemas, which say what this service provider
// supports, for an identity provider to read.

// discovery is a resource of /Schemas or /ResourceTypes.
type discovery struct {
	ID   string
	Body map[string]any
}

func sendDiscovery(rq *request, id string, all []discovery) error {
	if id != "" {
		for _, d := range all {
			if d.ID == id {
				return rq.send(http.StatusOK, d.Body)
			}
		}
		return &Error{Status: http.StatusNotFound, Detail: fmt.Sprintf("%.120q not found", id)}
	}
	bodies := make([]map[string]any, len(all))
	for i, d := range all {
		bodies[i] = d.Body
	}
	return rq.send(http.StatusOK, map[string]any{"schemas": []string{listSchema}, "totalResults": len(bodies), "startIndex": 1, "itemsPerPage": len(bodies), "Resources": bodies})
}

func serviceProviderConfig(base string) map[string]any {
	off := map[string]bool{"supported": false}
	return map[string]any{
		"schemas":          []string{configSchema},
		"documentationUri": "https://github.com/ctalk/ctalk/blob/main/docs/scim.md",
		"patch":            map[string]bool{"supported": true},
		"bulk":             map[string]any{"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
		"filter":           map[string]any{"supported": true, "maxResults": MaxCount},
		"changePassword":   off,
		"sort":             off,
		"etag":             map[string]bool{"supported": true},
		"authenticationSchemes": []map[string]any{{
			"type": "oauthbearertoken", "name": "Bearer token", "primary": true,
			"description": "A SCIM token an admin of the organization makes in ctalk's web app (Admin, SCIM)",
		}},
		"meta": map[string]string{"resourceType": "ServiceProviderConfig", "location": base + "/ServiceProviderConfig"},
	}
}

func resourceTypes(base string) []discovery {
	return []discovery{resourceType(base, "User", "/Users", "A member of the organization", userSchema),
		resourceType(base, "Group", "/Groups", "A private channel of the organization whose members the identity provider keeps", groupSchema)}
}

func resourceType(base, name, endpoint, description, schema string) discovery {
	return discovery{ID: name, Body: map[string]any{
		"schemas": []string{typeSchema}, "id": name, "name": name, "endpoint": endpoint,
		"description": description, "schema": schema,
		"meta": map[string]string{"resourceType": "ResourceType", "location": base + "/ResourceTypes/" + name},
	}}
}

// attribute describes one attribute of the User schema.
func attribute(name, typ string, required bool, uniqueness string, sub ...map[string]any) map[string]any {
	a := map[string]any{"name": name, "type": typ, "multiValued": false, "required": required, "caseExact": false,
		"mutability": "readWrite", "returned": "default", "uniqueness": uniqueness}
	if len(sub) > 0 {
		a["subAttributes"] = sub
	}
	return a
}

func schemas(base string) []discovery {
	emails := attribute("emails", "complex", false, "none", attribute("value", "string", false, "none"), attribute("type", "string", false, "none"), attribute("primary", "boolean", false, "none"))
	emails["multiValued"] = true
	members := attribute("members", "complex", false, "none", attribute("value", "string", false, "none"), attribute("display", "string", false, "none"), attribute("$ref", "reference", false, "none"))
	members["multiValued"] = true
	return []discovery{{ID: userSchema, Body: map[string]any{
		"schemas": []string{schemaSchema}, "id": userSchema, "name": "User", "description": "A member of the organization",
		"attributes": []map[string]any{
			attribute("userName", "string", true, "server"),
			attribute("externalId", "string", false, "none"),
			attribute("name", "complex", false, "none", attribute("formatted", "string", false, "none"), attribute("givenName", "string", false, "none"), attribute("familyName", "string", false, "none")),
			attribute("displayName", "string", false, "none"),
			emails,
			attribute("active", "boolean", false, "none"),
		},
		"meta": map[string]string{"resourceType": "Schema", "location": base + "/Schemas/" + userSchema},
	}}, {ID: groupSchema, Body: map[string]any{
		"schemas": []string{schemaSchema}, "id": groupSchema, "name": "Group", "description": "A private channel of the organization whose members the identity provider keeps",
		"attributes": []map[string]any{
			attribute("displayName", "string", true, "server"),
			attribute("externalId", "string", false, "none"),
			members,
		},
		"meta": map[string]string{"resourceType": "Schema", "location": base + "/Schemas/" + groupSchema},
	}}}
}

// groupResource is a Group as SCIM shows it.
type groupResource struct {
	Schemas     []string       `json:"schemas"`
	ID          string         `json:"id"`
	ExternalID  string         `json:"externalId,omitempty"`
	DisplayName string         `json:"displayName"`
	Members     []memberObject `json:"members,omitempty"`
	Meta        meta           `json:"meta"`
}

type memberObject struct {
	Value   string `json:"value"`
	Display string `json:"display,omitempty"`
	Ref     string `json:"$ref"`
}

func (g *Group) resource(base string) *groupResource {
	r := &groupResource{Schemas: []string{groupSchema}, ID: g.ID, ExternalID: g.ExternalID, DisplayName: g.DisplayName,
		Meta: meta{ResourceType: "Group", Created: g.Created.Format(time.RFC3339), LastModified: g.Modified.Format(time.RFC3339),
			Location: base + "/Groups/" + g.ID, Version: etag(g.Version)}}
	for _, m := range g.Members {
		r.Members = append(r.Members, memberObject{Value: m.ID, Display: m.Name, Ref: base + "/Users/" + m.ID})
	}
	return r
}

// groupAttrsOf reads a Group resource's body.
func (rq *request) groupAttrsOf() (GroupAttrs, error) {
	var body map[string]any
	if err := rq.decode(&body); err != nil {
		return GroupAttrs{}, err
	}
	c := &groupChange{}
	for k, v := range body {
		if err := c.set("replace", k, v); err != nil {
			return GroupAttrs{}, err
		}
	}
	if c.all != nil {
		c.attrs.Members = *c.all
	}
	return c.attrs, nil
}

// withoutMembers reports whether the request asks for groups without
// their members (excludedAttributes=members, as Entra asks).
func (rq *request) withoutMembers() bool {
	for _, a := range strings.Split(rq.r.URL.Query().Get("excludedAttributes"), ",") {
		if strings.EqualFold(strings.TrimSpace(a), "members") {
			return true
		}
	}
	return false
}

func (s *Service) sendGroup(rq *request, status int, g *Group) error {
	if rq.withoutMembers() {
		g.Members = nil
	}
	rq.w.Header().Set("ETag", etag(g.Version))
	return rq.send(status, g.resource(rq.base))
}

func (s *Service) getGroup(rq *request, id string) error {
	g, err := s.GetGroup(rq.r.Context(), rq.orgID, id)
	if err != nil {
		return err
	}
	return s.sendGroup(rq, http.StatusOK, g)
}

func (s *Service) listGroups(rq *request) error {
	f, start, count, err := listParams(rq.r.URL.Query(), "displayName", "externalId", "id")
	if err != nil {
		return err
	}
	groups, total, err := s.ListGroups(rq.r.Context(), rq.orgID, f, start, count, !rq.withoutMembers())
	if err != nil {
		return err
	}
	resources := make([]*groupResource, len(groups))
	for i, g := range groups {
		resources[i] = g.resource(rq.base)
	}
	return rq.send(http.StatusOK, map[string]any{"schemas": []string{listSchema}, "totalResults": total,
		"startIndex": start, "itemsPerPage": len(resources), "Resources": resources})
}

func (s *Service) createGroup(rq *request) error {
	rq.action = "create_group"
	a, err := rq.groupAttrsOf()
	if err != nil {
		return err
	}
	g, err := s.CreateGroup(rq.r.Context(), rq.orgID, a)
	if err != nil {
		return err
	}
	rq.ids = []string{g.ID}
	rq.w.Header().Set("Location", rq.base+"/Groups/"+g.ID)
	return s.sendGroup(rq, http.StatusCreated, g)
}

func (s *Service) replaceGroup(rq *request, id string) error {
	rq.action, rq.ids = "replace_group", []string{id}
	a, err := rq.groupAttrsOf()
	if err != nil {
		return err
	}
	g, err := s.ReplaceGroup(rq.r.Context(), rq.orgID, id, a, rq.precondition())
	if err != nil {
		return err
	}
	return s.sendGroup(rq, http.StatusOK, g)
}

func (s *Service) patchGroup(rq *request, id string) error {
	rq.action, rq.ids = "patch_group", []string{id}
	ops, err := rq.operations()
	if err != nil {
		return err
	}
	g, err := s.PatchGroup(rq.r.Context(), rq.orgID, id, ops, rq.precondition())
	if err != nil {
		return err
	}
	return s.sendGroup(rq, http.StatusOK, g)
}

func (s *Service) deleteGroup(rq *request, id string) error {
	rq.action, rq.ids = "delete_group", []string{id}
	if err := s.DeleteGroup(rq.r.Context(), rq.orgID, id, rq.precondition()); err != nil {
		return err
	}
	rq.w.WriteHeader(http.StatusNoContent)
	return nil
}
