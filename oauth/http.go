package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/ctalk/ctalk"
)

// The authorization server's paths. The sign-in page at AuthorizePath is
// served by the web package.
const (
	AuthorizePath = "/oauth/authorize"
	TokenPath     = "/oauth/token"
	RegisterPath  = "/oauth/register"
	RevokePath    = "/oauth/revoke"
	// ResourceMetadataPath is where the Protected Resource Metadata of /mcp
	// is served; the root well-known path serves it too.
	ResourceMetadataPath   = "/.well-known/oauth-protected-resource/mcp"
	RootResourceMetadata   = "/.well-known/oauth-protected-resource"
	AuthServerMetadataPath = "/.well-known/oauth-authorization-server"
)

// Endpoints serves the authorization server's HTTP endpoints, for the api
// package to mount. Every answer, errors included, is JSON; every endpoint
// answers CORS requests, for clients that run in a browser.
type Endpoints struct {
	svc       *Service
	log       *slog.Logger
	publicURL func(*http.Request) string
	clientIP  func(*http.Request) string
}

// Endpoints returns the HTTP endpoints over s. publicURL gives the URL a
// request reached this server at (PUBLIC_URL when set); clientIP its
// sender's address.
func (s *Service) Endpoints(log *slog.Logger, publicURL, clientIP func(*http.Request) string) *Endpoints {
	return &Endpoints{svc: s, log: log, publicURL: publicURL, clientIP: clientIP}
}

// ServerMetadata is the Authorization Server Metadata (RFC 8414) ctalk
// publishes. It is not oauthex.AuthServerMeta, which writes an empty
// jwks_uri that strict clients refuse as a malformed URL.
type ServerMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	ResponseModesSupported            []string `json:"response_modes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	RevocationAuthMethodsSupported    []string `json:"revocation_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported"`
	ServiceDocumentation              string   `json:"service_documentation,omitempty"`
}

// Metadata returns the Authorization Server Metadata of site.
func Metadata(site Site) *ServerMetadata {
	return &ServerMetadata{
		Issuer:                            site.Issuer,
		AuthorizationEndpoint:             site.Issuer + AuthorizePath,
		TokenEndpoint:                     site.Issuer + TokenPath,
		RegistrationEndpoint:              site.Issuer + RegisterPath,
		RevocationEndpoint:                site.Issuer + RevokePath,
		ScopesSupported:                   []string{Scope},
		ResponseTypesSupported:            []string{"code"},
		ResponseModesSupported:            []string{"query"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethodsSupported: []string{"none"},
		RevocationAuthMethodsSupported:    []string{"none"},
		CodeChallengeMethodsSupported:     []string{"S256"},
		ClientIDMetadataDocumentSupported: true,
		IssParameterSupported:             true,
	}
}

// ResourceMetadata returns the Protected Resource Metadata (RFC 9728) of
// site's MCP endpoint.
func ResourceMetadata(site Site) *oauthex.ProtectedResourceMetadata {
	return &oauthex.ProtectedResourceMetadata{
		Resource:               site.Resource,
		AuthorizationServers:   []string{site.Issuer},
		ScopesSupported:        []string{Scope},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "ctalk",
	}
}

// Challenge is the WWW-Authenticate value of a call that needs identity and
// came without a credential, or with one that is not valid (errCode
// "invalid_token", desc says why).
func Challenge(site Site, errCode, desc string) string {
	v := fmt.Sprintf(`Bearer resource_metadata=%q, scope=%q`, site.Issuer+ResourceMetadataPath, Scope)
	if errCode != "" {
		v += fmt.Sprintf(`, error=%q, error_description=%q`, errCode, strings.NewReplacer(`"`, `'`, `\`, `/`).Replace(desc))
	}
	return v
}

func (e *Endpoints) site(r *http.Request) Site { return SiteOf(e.publicURL(r)) }

// cors lets browser-based clients (MCP Inspector) call an endpoint and read
// its answer; it answers preflight requests itself. ok lists the methods.
func cors(w http.ResponseWriter, r *http.Request, methods string) (done bool) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", methods+", OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version")
	h.Set("Access-Control-Expose-Headers", "WWW-Authenticate")
	h.Set("Access-Control-Max-Age", "600")
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	if !strings.Contains(methods, r.Method) {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "invalid_request", "error_description": "use " + methods})
		return true
	}
	return false
}

// ProtectedResource serves the Protected Resource Metadata.
func (e *Endpoints) ProtectedResource(w http.ResponseWriter, r *http.Request) {
	if cors(w, r, "GET") {
		return
	}
	writeJSON(w, http.StatusOK, ResourceMetadata(e.site(r)))
}

// AuthServer serves the Authorization Server Metadata.
func (e *Endpoints) AuthServer(w http.ResponseWriter, r *http.Request) {
	if cors(w, r, "GET") {
		return
	}
	writeJSON(w, http.StatusOK, Metadata(e.site(r)))
}

// Register serves dynamic client registration (RFC 7591).
func (e *Endpoints) Register(w http.ResponseWriter, r *http.Request) {
	if cors(w, r, "POST") {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxMetadataSize))
	if err != nil {
		e.fail(w, r, invalidClientMetadata("the registration request is over %d bytes or could not be read", maxMetadataSize))
		return
	}
	resp, err := e.svc.Register(r.Context(), body, e.clientIP(r))
	if err != nil {
		e.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, resp)
}

// Token serves the token endpoint.
func (e *Endpoints) Token(w http.ResponseWriter, r *http.Request) {
	if cors(w, r, "POST") {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		e.fail(w, r, invalidRequest("the body must be application/x-www-form-urlencoded parameters"))
		return
	}
	form := r.PostForm
	if id, _, ok := r.BasicAuth(); ok && form.Get("client_id") == "" {
		form.Set("client_id", id)
	}
	resp, err := e.svc.Token(r.Context(), form, e.site(r))
	if err != nil {
		e.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// Revoke serves token revocation (RFC 7009): the token's whole grant ends.
func (e *Endpoints) Revoke(w http.ResponseWriter, r *http.Request) {
	if cors(w, r, "POST") {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil || r.PostForm.Get("token") == "" {
		e.fail(w, r, invalidRequest("send the token to revoke as the form parameter token"))
		return
	}
	if err := e.svc.Revoke(r.Context(), r.PostForm.Get("token")); err != nil {
		e.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// fail writes err as an OAuth error response.
func (e *Endpoints) fail(w http.ResponseWriter, r *http.Request, err error) {
	var oe *Error
	if errors.As(err, &oe) {
		writeJSON(w, oe.Status, map[string]string{"error": oe.Code, "error_description": oe.Description})
		return
	}
	status, code := http.StatusInternalServerError, "server_error"
	msg := ctalk.ErrorMessage(err)
	switch ctalk.ErrorCode(err) {
	case ctalk.ERateLimited:
		status, code = http.StatusTooManyRequests, "too_many_requests"
		var ce *ctalk.Error
		if errors.As(err, &ce) && ce.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(ce.RetryAfter.Seconds())))
		}
	case ctalk.EUnavailable:
		status, code = http.StatusServiceUnavailable, "temporarily_unavailable"
	case ctalk.EInvalid:
		status, code = http.StatusBadRequest, "invalid_request"
	default:
		e.log.ErrorContext(r.Context(), "oauth endpoint failed", "path", r.URL.Path, "error", err)
		msg = "internal error; retry, and report it if it persists"
	}
	writeJSON(w, status, map[string]string{"error": code, "error_description": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// readLimited reads a response body of at most limit bytes.
func readLimited(resp *http.Response, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, errors.New("could not be read")
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("is over %d bytes", limit)
	}
	return b, nil
}
