package testkit

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// OIDCUser is the person an OpenIDProvider signs in.
type OIDCUser struct {
	Subject       string
	Email         string
	EmailVerified bool
	Name          string
}

// OIDCFault changes the next ID token an OpenIDProvider issues, so that a
// test can see the relying party refuse it.
type OIDCFault struct {
	Audience string // another audience
	Issuer   string // another issuer
	Expired  bool   // expired an hour ago
	Nonce    string // another nonce
	// ForeignKey signs with a key the provider does not publish.
	ForeignKey bool
}

// OpenIDProvider is a small but real OpenID Provider on a loopback port:
// discovery, a JWKS of its RSA signing key (which Rotate replaces), an
// authorization endpoint that signs in User at once (no page), and a token
// endpoint that checks the client's id and secret, the code, its redirect
// URI and its PKCE verifier (S256) before issuing an RS256 ID token with
// the nonce of the authorization request.
type OpenIDProvider struct {
	*httptest.Server
	ClientID, ClientSecret string

	mu     sync.Mutex
	key    *rsa.PrivateKey
	kid    string
	user   OIDCUser
	fault  OIDCFault
	codes  map[string]oidcCode
	tokens int
}

type oidcCode struct {
	clientID, redirectURI, nonce, challenge string
	user                                    OIDCUser
}

// NewOpenIDProvider starts a provider for one client, closed with the test.
func NewOpenIDProvider(t testing.TB, clientID, clientSecret string) *OpenIDProvider {
	t.Helper()
	p := &OpenIDProvider{ClientID: clientID, ClientSecret: clientSecret, codes: map[string]oidcCode{}}
	p.Rotate()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /keys", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

// SetUser sets who the provider signs in next.
func (p *OpenIDProvider) SetUser(u OIDCUser) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.user = u
}

// Fault has the next ID token issued break f's rule.
func (p *OpenIDProvider) Fault(f OIDCFault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
}

// Rotate replaces the signing key with a new one under a new key id.
func (p *OpenIDProvider) Rotate() {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.key, p.kid = k, randomString()
}

// Tokens is how many ID tokens the provider issued.
func (p *OpenIDProvider) Tokens() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tokens
}

func (p *OpenIDProvider) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.URL,
		"authorization_endpoint":                p.URL + "/authorize",
		"token_endpoint":                        p.URL + "/token",
		"jwks_uri":                              p.URL + "/keys",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
	})
}

func (p *OpenIDProvider) jwks(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: p.kid, Algorithm: "RS256", Use: "sig"}}}
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, set)
}

func (p *OpenIDProvider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Host == "" || q.Get("client_id") != p.ClientID || q.Get("response_type") != "code" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" || q.Get("state") == "" {
		http.Error(w, "PKCE, nonce and state are required", http.StatusBadRequest)
		return
	}
	code := randomString()
	p.mu.Lock()
	p.codes[code] = oidcCode{clientID: p.ClientID, redirectURI: q.Get("redirect_uri"), nonce: q.Get("nonce"), challenge: q.Get("code_challenge"), user: p.user}
	p.mu.Unlock()
	back := redirect.Query()
	back.Set("code", code)
	back.Set("state", q.Get("state"))
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (p *OpenIDProvider) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
	} else {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	}
	if id != p.ClientID || secret != p.ClientSecret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	p.mu.Lock()
	c, found := p.codes[r.PostFormValue("code")]
	delete(p.codes, r.PostFormValue("code"))
	p.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
	if !found || c.redirectURI != r.PostFormValue("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	}
	p.mu.Lock()
	f, key, kid := p.fault, p.key, p.kid
	p.fault = OIDCFault{}
	p.tokens++
	p.mu.Unlock()
	now := time.Now()
	claims := map[string]any{"iss": p.URL, "sub": c.user.Subject, "aud": c.clientID, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"nonce": c.nonce, "email": c.user.Email, "email_verified": c.user.EmailVerified, "name": c.user.Name}
	if f.Audience != "" {
		claims["aud"] = f.Audience
	}
	if f.Issuer != "" {
		claims["iss"] = f.Issuer
	}
	if f.Expired {
		claims["iat"], claims["exp"] = now.Add(-2*time.Hour).Unix(), now.Add(-time.Hour).Unix()
	}
	if f.Nonce != "" {
		claims["nonce"] = f.Nonce
	}
	if f.ForeignKey {
		key, _ = rsa.GenerateKey(rand.Reader, 2048)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	idToken, _ := jws.CompactSerialize()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": randomString(), "token_type": "Bearer", "expires_in": 300, "id_token": idToken})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func randomString() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
