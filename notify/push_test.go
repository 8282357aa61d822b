package notify_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/notify"
)

// browser is a push subscription's user agent: its key pair and auth
// secret, as a browser keeps them to decrypt what its push service hands it.
type browser struct {
	key  *ecdh.PrivateKey
	auth []byte
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{key: k, auth: make([]byte, 16)}
	rand.Read(b.auth)
	return b
}

func (b *browser) subscription(endpoint string) notify.PushSubscription {
	return notify.PushSubscription{Endpoint: endpoint,
		P256dh: base64.RawURLEncoding.EncodeToString(b.key.PublicKey().Bytes()),
		Auth:   base64.RawURLEncoding.EncodeToString(b.auth), UserAgent: "Test Browser"}
}

// decrypt opens an aes128gcm body (RFC 8188) encrypted to the browser as
// RFC 8291 says: written here from the RFC, not taken from the library
// that encrypts.
func (b *browser) decrypt(body []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("body shorter than its header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if len(body) < 21+idlen || rs < 18 {
		return nil, errors.New("bad header")
	}
	asPublic, ciphertext := body[21:21+idlen], body[21+idlen:]
	pub, err := ecdh.P256().NewPublicKey(asPublic)
	if err != nil {
		return nil, fmt.Errorf("the key id is not the server's P-256 key: %w", err)
	}
	shared, err := b.key.ECDH(pub)
	if err != nil {
		return nil, err
	}
	info := append(append([]byte("WebPush: info\x00"), b.key.PublicKey().Bytes()...), asPublic...)
	ikm, err := hkdf.Key(sha256.New, shared, b.auth, string(info), 32)
	if err != nil {
		return nil, err
	}
	cek, _ := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	nonce, _ := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	block, _ := aes.NewCipher(cek)
	gcm, _ := cipher.NewGCM(block)
	if len(ciphertext) > int(rs) {
		return nil, errors.New("more than one record")
	}
	plain, err := gcm.Open(nil, nonce, ciphertext, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot decrypt with the subscription's keys: %w", err)
	}
	// The last record ends with the delimiter 2, then zero padding.
	end := bytes.LastIndexByte(plain, 2)
	if end < 0 || len(bytes.Trim(plain[end+1:], "\x00")) != 0 {
		return nil, errors.New("no last-record delimiter")
	}
	return plain[:end], nil
}

// checkVAPID checks a request's Authorization header as RFC 8292 says: a
// JWT signed with ES256 by the key k, for the endpoint's origin, expiring
// within a day, with a contact.
func checkVAPID(header, wantKey, origin string) error {
	rest, ok := strings.CutPrefix(header, "vapid ")
	if !ok {
		return fmt.Errorf("the Authorization is not vapid: %q", header)
	}
	var token, k string
	for _, part := range strings.Split(rest, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch name {
		case "t":
			token = value
		case "k":
			k = value
		}
	}
	if k != wantKey {
		return fmt.Errorf("k = %q, not the server's public key %q", k, wantKey)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errors.New("the token is not a JWT")
	}
	raw, _ := base64.RawURLEncoding.DecodeString(k)
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		return fmt.Errorf("k is not a P-256 point: %w", err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return errors.New("the signature is not ES256's r||s")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return errors.New("the JWT's signature does not verify with k")
	}
	var hdr struct{ Alg string }
	var claims struct {
		Aud, Sub string
		Exp      int64
	}
	h, _ := base64.RawURLEncoding.DecodeString(parts[0])
	c, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if json.Unmarshal(h, &hdr) != nil || json.Unmarshal(c, &claims) != nil || hdr.Alg != "ES256" {
		return fmt.Errorf("bad JWT header or claims: %s %s", h, c)
	}
	if claims.Aud != origin {
		return fmt.Errorf("aud = %q, want the push service's origin %q", claims.Aud, origin)
	}
	if exp := time.Unix(claims.Exp, 0); exp.Before(time.Now()) || exp.After(time.Now().Add(24*time.Hour)) {
		return fmt.Errorf("exp = %s, not within the next 24 hours", exp)
	}
	if !strings.HasPrefix(claims.Sub, "mailto:") && !strings.HasPrefix(claims.Sub, "https:") {
		return fmt.Errorf("sub = %q, neither mailto: nor https:", claims.Sub)
	}
	return nil
}

// pushService is a push service on loopback: it decrypts what it
// receives for the browser, checks the VAPID header, and answers status.
type pushService struct {
	*httptest.Server
	mu       sync.Mutex
	status   int
	payloads []map[string]any
	errs     []error
	headers  []http.Header
}

func startPushService(t *testing.T, b *browser, s *notify.Service) *pushService {
	p := &pushService{status: http.StatusCreated}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.headers = append(p.headers, r.Header.Clone())
		err := checkVAPID(r.Header.Get("Authorization"), s.VAPIDPublicKey(), "http://"+r.Host)
		if r.Header.Get("Content-Encoding") != "aes128gcm" {
			err = errors.Join(err, fmt.Errorf("Content-Encoding = %q", r.Header.Get("Content-Encoding")))
		}
		plain, derr := b.decrypt(body)
		var m map[string]any
		if derr == nil {
			derr = json.Unmarshal(plain, &m)
		}
		if err = errors.Join(err, derr); err != nil {
			p.errs = append(p.errs, err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		p.payloads = append(p.payloads, m)
		w.WriteHeader(p.status)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *pushService) got() ([]map[string]any, []error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]any(nil), p.payloads...), append([]error(nil), p.errs...)
}

// TestWebPushArrivesEncryptedAndSigned subscribes a browser for Bo and
// sends him a question: his push service receives it signed with the
// server's VAPID key and encrypted to his browser's keys, carrying the
// title, the first line and the link; a second server start keeps the
// same VAPID key; a push service answering 410 deletes the subscription.
func TestWebPushArrivesEncryptedAndSigned(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		ctx := dbtest.Operator()
		s := newService(t, d, nil)
		if again := newService(t, d, nil); again.VAPIDPublicKey() != s.VAPIDPublicKey() || s.VAPIDPublicKey() == "" {
			t.Fatalf("the VAPID key is %q on one start and %q on the next", s.VAPIDPublicKey(), again.VAPIDPublicKey())
		}
		b := newBrowser(t)
		ps := startPushService(t, b, s)
		if _, err := s.SubscribePush(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, b.subscription(ps.URL+"/push/bo-1")); err != nil {
			t.Fatal(err)
		}
		queue(t, d, s, question("q_1"))
		drain(t, s)
		payloads, errs := ps.got()
		if len(errs) > 0 || len(payloads) != 1 {
			t.Fatalf("the push service got %d payloads, errors %v", len(payloads), errs)
		}
		m := payloads[0]
		if m["title"] != "Ann asks you a question" || m["url"] != "https://ctalk.test/inbox/q_1" || m["body"] != "Is the release on Friday?" {
			t.Errorf("payload = %v", m)
		}
		if n := count(t, d, `SELECT COUNT(*) FROM notify_deliveries WHERE channel = 'push' AND status = 'sent'`); n != 1 {
			t.Errorf("%d push deliveries sent, want 1", n)
		}
		ps.mu.Lock()
		ps.status = http.StatusGone
		ps.mu.Unlock()
		queue(t, d, s, question("q_2"))
		drain(t, s)
		if list, _ := s.PushBrowsers(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}); len(list) != 0 {
			t.Errorf("after 410 Gone the browser is still subscribed: %v", list)
		}
		if n := count(t, d, `SELECT COUNT(*) FROM notify_deliveries WHERE channel = 'push' AND status = 'failed'`); n != 1 {
			t.Errorf("%d push deliveries failed after 410, want 1", n)
		}
	})
}

// TestPushSubscriptionsRefuseBadInput: what a browser would never send is
// refused with what to send instead; one person's browser is not
// another's to remove.
func TestPushSubscriptionsRefuseBadInput(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		ctx := dbtest.Operator()
		s := newService(t, d, nil, func(c *notify.Config) { c.AllowHTTP = false })
		b := newBrowser(t)
		good := b.subscription("https://push.example.net/send/abc")
		cases := map[string]func(*notify.PushSubscription){
			"http endpoint":  func(p *notify.PushSubscription) { p.Endpoint = "http://push.example.net/x" },
			"no endpoint":    func(p *notify.PushSubscription) { p.Endpoint = "" },
			"credentials":    func(p *notify.PushSubscription) { p.Endpoint = "https://u:p@push.example.net/x" },
			"p256dh garbage": func(p *notify.PushSubscription) { p.P256dh = "not-a-key" },
			"short auth":     func(p *notify.PushSubscription) { p.Auth = "AAAA" },
		}
		for name, spoil := range cases {
			in := good
			spoil(&in)
			_, err := s.SubscribePush(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, in)
			if ctalk.ErrorCode(err) != ctalk.EInvalid || !strings.Contains(ctalk.ErrorMessage(err), "must") {
				t.Errorf("%s: got %v, want EInvalid saying what it must be", name, err)
			}
		}
		if _, err := s.SubscribePush(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, good); err != nil {
			t.Fatal(err)
		}
		if err := s.UnsubscribePush(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, good.Endpoint); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("Ann removing Bo's browser: got %v, want ENotFound", err)
		}
		if err := s.UnsubscribePush(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, good.Endpoint); err != nil {
			t.Errorf("Bo removing his browser: %v", err)
		}
	})
}

// TestPushLimitHoldsUnderConcurrency: twenty browsers subscribing at once
// for one person leave exactly MaxPushSubscriptions, the rest refused as
// over the limit.
func TestPushLimitHoldsUnderConcurrency(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		ctx := dbtest.Operator()
		s := newService(t, d, nil)
		b := newBrowser(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		refused := 0
		for i := range 2 * notify.MaxPushSubscriptions {
			wg.Go(func() {
				_, err := s.SubscribePush(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, b.subscription(fmt.Sprintf("https://push.example.net/send/%d", i)))
				if err != nil && ctalk.ErrorCode(err) != ctalk.EConflict {
					t.Errorf("subscribe %d: %v", i, err)
				}
				if err != nil {
					mu.Lock()
					refused++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if list, _ := s.PushBrowsers(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}); len(list) != notify.MaxPushSubscriptions || refused != notify.MaxPushSubscriptions {
			t.Fatalf("%d browsers stored, %d refused; want %d each", len(list), refused, notify.MaxPushSubscriptions)
		}
	})
}
