package oauth_test

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/oauth"
	"github.com/ctalk/ctalk/orgs"
)

const redirect = "http://localhost:53219/callback"

// server is an authorization server with one registered client and one
// person, acme/alice, on a clock the test moves.
type server struct {
	svc      *oauth.Service
	site     oauth.Site
	clientID string
	offset   time.Duration
	mu       sync.Mutex
}

func newServer(t *testing.T, d *db.DB) *server {
	t.Helper()
	ctx := dbtest.Operator()
	srv := &server{site: oauth.SiteOf("https://ctalk.example")}
	real := d.Now
	d.Now = func() time.Time {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return real().Add(srv.offset)
	}
	cfg := auth.DefaultConfig()
	cfg.BcryptCost = 4
	a, err := auth.NewService(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := orgs.NewService(d, a)
	if _, err := o.Register(ctx, orgs.NewOrg{ID: "acme", Name: "Acme", AdminPassword: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.AddUser(ctx, "acme", orgs.NewUser{ID: "alice", Name: "Alice", Password: "hunter22-long"}); err != nil {
		t.Fatal(err)
	}
	srv.svc = oauth.NewService(d, a, oauth.DefaultConfig())
	reg, err := srv.svc.Register(ctx, []byte(`{"client_name":"Test","redirect_uris":["`+redirect+`"],"token_endpoint_auth_method":"none"}`), "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	srv.clientID = reg.ClientID
	return srv
}

func (srv *server) advance(d time.Duration) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.offset += d
}

// challenge returns the S256 challenge of verifier.
func challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorize checks an authorization request whose parameters override the
// defaults (S256 over the challenge of "v"*43, this server's resource).
func (srv *server) authorize(t *testing.T, params map[string]string) (*oauth.AuthRequest, error) {
	t.Helper()
	q := url.Values{"response_type": {"code"}, "client_id": {srv.clientID}, "redirect_uri": {redirect}, "state": {"s"},
		"code_challenge": {challenge(strings.Repeat("v", 43))}, "code_challenge_method": {"S256"}, "resource": {srv.site.Resource}}
	for k, v := range params {
		if v == "" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
	}
	return srv.svc.ParseAuthorize(dbtest.Operator(), q, srv.site)
}

// code returns a code that alice's consent issued for verifier's challenge.
func (srv *server) code(t *testing.T, verifier string) string {
	t.Helper()
	r, err := srv.authorize(t, map[string]string{"code_challenge": challenge(verifier)})
	if err != nil {
		t.Fatal(err)
	}
	loc, err := srv.svc.Approve(dbtest.Operator(), r, &auth.Session{OrgID: "acme", UserID: "alice"}, srv.site.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("code")
}

// exchange presents code with verifier ("" sends none).
func (srv *server) exchange(code, verifier string) (*oauth.TokenResponse, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {srv.clientID},
		"redirect_uri": {redirect}, "resource": {srv.site.Resource}}
	if verifier != "" {
		form.Set("code_verifier", verifier)
	}
	return srv.svc.Token(dbtest.Operator(), form, srv.site)
}

// connect signs alice in and returns her first tokens.
func (srv *server) connect(t *testing.T) *oauth.TokenResponse {
	t.Helper()
	v := strings.Repeat("c", 43)
	tok, err := srv.exchange(srv.code(t, v), v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (srv *server) refresh(rt string) (*oauth.TokenResponse, error) {
	return srv.svc.Token(dbtest.Operator(), url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, srv.site)
}

// wantOAuthError checks that err is the OAuth error code whose description
// contains want.
func wantOAuthError(t *testing.T, err error, code, want string) {
	t.Helper()
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Code != code || !strings.Contains(oe.Description, want) {
		t.Errorf("error = %v, want %s containing %q", err, code, want)
	}
}

// TestPKCE: an authorization request must carry an S256 challenge of the
// right shape, and a code is exchanged only with the verifier of that
// challenge: not without one, not with another, not with the challenge
// itself (the plain method).
func TestPKCE(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		srv := newServer(t, d)
		for _, tc := range []struct {
			name   string
			params map[string]string
			want   string
		}{
			{"no challenge", map[string]string{"code_challenge": ""}, "PKCE is required"},
			{"no method", map[string]string{"code_challenge_method": ""}, "PKCE is required"},
			{"plain method", map[string]string{"code_challenge_method": "plain", "code_challenge": strings.Repeat("v", 43)}, `code_challenge_method "plain" is not supported: use S256`},
			{"short challenge", map[string]string{"code_challenge": strings.Repeat("v", 42)}, "43 to 128 characters"},
			{"long challenge", map[string]string{"code_challenge": strings.Repeat("v", 129)}, "43 to 128 characters"},
			{"challenge with a space", map[string]string{"code_challenge": strings.Repeat("v", 42) + " "}, "43 to 128 characters"},
		} {
			t.Run("authorize/"+tc.name, func(t *testing.T) {
				r, err := srv.authorize(t, tc.params)
				if r == nil {
					t.Fatalf("request refused without a redirect: %v", err)
				}
				wantOAuthError(t, err, "invalid_request", tc.want)
			})
		}
		verifier := strings.Repeat("k", 43)
		for _, tc := range []struct {
			name, verifier, code, want string
		}{
			{"no verifier", "", "invalid_request", "code_verifier is missing: PKCE is required"},
			{"another verifier", strings.Repeat("j", 43), "invalid_grant", "code_verifier does not match"},
			{"the challenge as verifier", challenge(verifier), "invalid_grant", "code_verifier does not match"},
			{"verifier with one character changed", verifier[:42] + "K", "invalid_grant", "code_verifier does not match"},
		} {
			t.Run("token/"+tc.name, func(t *testing.T) {
				tok, err := srv.exchange(srv.code(t, verifier), tc.verifier)
				if tok != nil {
					t.Fatalf("exchanged with %q: %+v", tc.verifier, tok)
				}
				wantOAuthError(t, err, tc.code, tc.want)
			})
		}
		t.Run("token/the verifier", func(t *testing.T) {
			if _, err := srv.exchange(srv.code(t, verifier), verifier); err != nil {
				t.Errorf("exchange with the right verifier: %v", err)
			}
		})
	})
}

// TestRefreshReuse: a replaced refresh token may be retried only within
// the grace and before its successor is used; any other use is reuse,
// refused, and ends the whole grant: its newest refresh token and every
// access token of it.
func TestRefreshReuse(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		srv := newServer(t, d)
		ctx := dbtest.Operator()
		// ended checks that no token of the grant works any more.
		ended := func(t *testing.T, toks ...*oauth.TokenResponse) {
			t.Helper()
			for i, tok := range toks {
				if _, err := srv.svc.Authenticate(ctx, tok.AccessToken, srv.site.Resource); ctalk.ErrorCode(err) != ctalk.EUnauthorized {
					t.Errorf("access token %d after reuse: %v, want unauthorized", i+1, err)
				}
				if _, err := srv.refresh(tok.RefreshToken); err == nil {
					t.Errorf("refresh token %d after reuse still refreshes", i+1)
				}
			}
		}
		t.Run("successor used, within the grace", func(t *testing.T) {
			t1 := srv.connect(t)
			t2, err := srv.refresh(t1.RefreshToken)
			if err != nil {
				t.Fatal(err)
			}
			t3, err := srv.refresh(t2.RefreshToken)
			if err != nil {
				t.Fatal(err)
			}
			_, err = srv.refresh(t1.RefreshToken)
			wantOAuthError(t, err, "invalid_grant", "already used and replaced; this connection is revoked")
			ended(t, t1, t2, t3)
		})
		t.Run("successor unused, after the grace", func(t *testing.T) {
			t1 := srv.connect(t)
			t2, err := srv.refresh(t1.RefreshToken)
			if err != nil {
				t.Fatal(err)
			}
			srv.advance(oauth.DefaultConfig().RefreshGrace + time.Second)
			_, err = srv.refresh(t1.RefreshToken)
			wantOAuthError(t, err, "invalid_grant", "already used and replaced; this connection is revoked")
			ended(t, t1, t2)
		})
		t.Run("successor unused, retried within the grace", func(t *testing.T) {
			t1 := srv.connect(t)
			lost, err := srv.refresh(t1.RefreshToken)
			if err != nil {
				t.Fatal(err)
			}
			t2, err := srv.refresh(t1.RefreshToken)
			if err != nil {
				t.Fatalf("retry within the grace: %v", err)
			}
			if _, err := srv.refresh(lost.RefreshToken); err == nil {
				t.Error("the successor the retry replaced still refreshes")
			}
			t3, err := srv.refresh(t2.RefreshToken)
			if err != nil {
				t.Fatalf("the retry's successor: %v", err)
			}
			if _, err := srv.svc.Authenticate(ctx, t3.AccessToken, srv.site.Resource); err != nil {
				t.Errorf("newest access token: %v", err)
			}
		})
	})
}

// TestRefreshRetryRacesSuccessor: a retry of a replaced refresh token and
// the first refresh of its successor, at once, never both succeed: either
// the retry replaces the unused successor, which then is unknown, or the
// successor is used first and the retry is reuse. Two live chains in one
// grant would let a thief and the client go on side by side.
func TestRefreshRetryRacesSuccessor(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		srv := newServer(t, d)
		for i := range 150 {
			t1 := srv.connect(t)
			t2, err := srv.refresh(t1.RefreshToken)
			if err != nil {
				t.Fatal(err)
			}
			var errs [2]error
			var wg sync.WaitGroup
			for j, rt := range []string{t1.RefreshToken, t2.RefreshToken} {
				wg.Go(func() { _, errs[j] = srv.refresh(rt) })
			}
			wg.Wait()
			if errs[0] == nil && errs[1] == nil {
				t.Fatalf("round %d: the retry of the replaced token and its successor's refresh both succeeded: the grant forked", i)
			}
		}
	})
}
