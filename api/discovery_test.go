package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/tools"
)

// compileSchema compiles the vendored schema file at ref (a file name,
// with a #fragment for one of its definitions).
func compileSchema(t *testing.T, ref string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	file, _, _ := strings.Cut(ref, "#")
	doc, err := os.Open("testdata/schemas/" + file)
	if err != nil {
		t.Fatal(err)
	}
	defer doc.Close()
	v, err := jsonschema.UnmarshalJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource(file, v); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(ref)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// validate checks the JSON b against sch.
func validate(sch *jsonschema.Schema, b []byte) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

func getBody(t *testing.T, u string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestServerCard reads the server card where the extension reserves it and
// at the .well-known form, checks it against the extension's schema and
// against what the running server says of itself to a connected client,
// and follows its links: the icon, the authorization metadata, and the AI
// Catalog's entry.
func TestServerCard(t *testing.T) {
	t.Parallel()
	sch := compileSchema(t, "server-card-v1.schema.json#/$defs/ServerCard")
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			e := start(t, engine)
			var cards []string
			for _, path := range []string{api.ServerCardPath, api.WellKnownServerCardPath} {
				resp, b := getBody(t, e.URL+path)
				if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/mcp-server-card+json" || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
					t.Fatalf("GET %s: %d %q CORS %q %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Access-Control-Allow-Origin"), b)
				}
				if err := validate(sch, b); err != nil {
					t.Fatalf("GET %s: not a server card: %v\n%s", path, err, b)
				}
				cards = append(cards, string(b))
			}
			if cards[0] != cards[1] {
				t.Errorf("the two locations serve different cards:\n%s\n%s", cards[0], cards[1])
			}
			var card struct {
				Name, Version, Title, Description string
				Icons                             []struct{ Src, MIMEType string }
				Remotes                           []struct {
					Type, URL                 string
					SupportedProtocolVersions []string
					Headers                   []struct {
						Name     string
						IsSecret bool
					}
				}
				Meta map[string]struct {
					Capabilities  map[string]any
					Authorization struct {
						ProtectedResourceMetadata string
						AuthorizationServers      []string
					}
				} `json:"_meta"`
			}
			if err := json.Unmarshal([]byte(cards[0]), &card); err != nil {
				t.Fatal(err)
			}
			cs := e.Connect(t, eraSessions, "")
			info := cs.InitializeResult().ServerInfo
			if card.Name != tools.RegistryName || card.Version != info.Version || card.Title != info.Title || card.Description != info.Description {
				t.Errorf("card names %q %q %q %q; the server info %+v", card.Name, card.Version, card.Title, card.Description, info)
			}
			if len(info.Icons) != 1 || !strings.HasPrefix(info.Icons[0].Source, "data:image/svg+xml;base64,") {
				t.Errorf("server info icons = %+v, want the SVG as a data URI", info.Icons)
			}
			if len(card.Remotes) != 1 {
				t.Fatalf("remotes = %+v", card.Remotes)
			}
			r := card.Remotes[0]
			if r.Type != "streamable-http" || r.URL != e.URL+"/mcp" || !slices.Contains(r.SupportedProtocolVersions, "2026-07-28") || !slices.Contains(r.SupportedProtocolVersions, "2025-11-25") {
				t.Errorf("remote = %+v", r)
			}
			if len(r.Headers) != 1 || r.Headers[0].Name != "Authorization" || !r.Headers[0].IsSecret {
				t.Errorf("remote headers = %+v", r.Headers)
			}
			meta := card.Meta["io.github.ctalk/discovery"]
			if _, ok := meta.Capabilities["tools"]; !ok {
				t.Errorf("card capabilities = %v, want the server's", meta.Capabilities)
			}
			if !slices.Equal(meta.Authorization.AuthorizationServers, []string{e.URL}) {
				t.Errorf("authorization servers = %v", meta.Authorization.AuthorizationServers)
			}
			status, _, prm := getJSON(t, meta.Authorization.ProtectedResourceMetadata)
			if status != http.StatusOK || prm["resource"] != r.URL {
				t.Errorf("protected resource metadata: %d %v", status, prm)
			}
			if len(card.Icons) != 1 {
				t.Fatalf("icons = %+v", card.Icons)
			}
			resp, svg := getBody(t, card.Icons[0].Src)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(string(svg), "<svg") {
				t.Errorf("icon: %d %q %.40s", resp.StatusCode, resp.Header.Get("Content-Type"), svg)
			}
			status, h, cat := getJSON(t, e.URL+api.AICatalogPath)
			entries := list(cat, "entries")
			if status != http.StatusOK || h.Get("Content-Type") != "application/ai-catalog+json" || len(entries) != 1 ||
				field(entries[0], "url") != e.URL+api.ServerCardPath || field(entries[0], "type") != "application/mcp-server-card+json" ||
				field(entries[0], "identifier") != "urn:air:127.0.0.1:mcp:ctalk" {
				t.Errorf("AI catalog: %d %q %v", status, h.Get("Content-Type"), cat)
			}
		})
	}
}

// TestRegistryServerJSON checks deploy/server.json, what the MCP registry
// lists, against the registry's schema and against the server's own names,
// and that the schema refuses a file it should.
func TestRegistryServerJSON(t *testing.T) {
	t.Parallel()
	sch := compileSchema(t, "registry-server-2025-12-11.schema.json")
	b, err := os.ReadFile("../deploy/server.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(sch, b); err != nil {
		t.Fatalf("deploy/server.json: %v", err)
	}
	var doc struct {
		Schema            string `json:"$schema"`
		Name, Description string
		Title             string
		Remotes           []struct {
			Type, URL string
			Variables map[string]any
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json" {
		t.Errorf("$schema = %q, not the schema vendored", doc.Schema)
	}
	if doc.Name != tools.RegistryName || doc.Description != tools.Description || doc.Title != tools.Title {
		t.Errorf("server.json names %q %q %q, the server %q %q %q", doc.Name, doc.Title, doc.Description, tools.RegistryName, tools.Title, tools.Description)
	}
	if len(doc.Remotes) != 1 || doc.Remotes[0].Type != "streamable-http" || !strings.HasSuffix(doc.Remotes[0].URL, "}/mcp") || doc.Remotes[0].Variables["host"] == nil {
		t.Errorf("remotes = %+v, want /mcp on a host the person names", doc.Remotes)
	}
	bad := strings.Replace(string(b), `"io.github.ctalk/ctalk"`, `"ctalk"`, 1)
	if err := validate(sch, []byte(bad)); err == nil {
		t.Error("the schema takes a name that is not reverse DNS: it checks nothing")
	}
}
