package notify

import (
	"context"
	"crypto/ecdh"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/outbound"
)

// ChannelPush is Web Push to the browsers a person turned it on in.
const ChannelPush = "push"

// vapidKeyName names the server's VAPID key pair in notify_keys.
const vapidKeyName = "vapid"

// MaxPushSubscriptions bounds the browsers of one person.
const MaxPushSubscriptions = 10

// vapidKeys is the server's VAPID key pair (RFC 8292), base64url without
// padding, as the browser's applicationServerKey and webpush-go take them.
// private is a secret: it signs every push request's JWT, and is never
// logged, shown or returned.
type vapidKeys struct{ private, public string }

// loadVAPID reads the server's VAPID key pair, making it at the first
// start; every replica reads the one that won.
func (s *Service) loadVAPID(ctx context.Context) error {
	var secret string
	err := s.db.QueryRow(ctx, keySQL, vapidKeyName).Scan(&secret)
	if errors.Is(err, sql.ErrNoRows) {
		priv, pub, gerr := webpush.GenerateVAPIDKeys()
		if gerr != nil {
			return fmt.Errorf("make the VAPID keys: %w", gerr)
		}
		err = s.db.Write(ctx, func(q db.Querier) error {
			_, err := q.Exec(ctx, insertKeySQL, vapidKeyName, priv+"."+pub, s.db.Now())
			return err
		})
		if err == nil {
			err = s.db.QueryRow(ctx, keySQL, vapidKeyName).Scan(&secret)
		}
	}
	if err != nil {
		return fmt.Errorf("load the VAPID keys: %w", err)
	}
	priv, pub, ok := strings.Cut(secret, ".")
	if !ok {
		return errors.New("the stored VAPID keys are malformed")
	}
	s.vapid.Store(&vapidKeys{private: priv, public: pub})
	return nil
}

// VAPIDPublicKey is the public half of the server's VAPID key pair, the
// applicationServerKey a browser subscribes with; empty before Start.
func (s *Service) VAPIDPublicKey() string {
	if k := s.vapid.Load(); k != nil {
		return k.public
	}
	return ""
}

// PushSubscription is a browser's PushSubscription, as its JSON gives it:
// the push service's endpoint and the keys payloads are encrypted to.
type PushSubscription struct {
	Endpoint string `json:"endpoint"`
	P256dh   string `json:"p256dh"`
	Auth     string `json:"auth"`
	// UserAgent names the browser on the settings page.
	UserAgent string `json:"-"`
}

// PushBrowser is a subscribed browser as its person sees it.
type PushBrowser struct {
	ID        string    `json:"push_id"`
	Service   string    `json:"push_service" jsonschema:"the host of the browser's push service"`
	UserAgent string    `json:"user_agent"`
	CreatedAt time.Time `json:"created_at"`
}

func pushID(endpoint string) string {
	sum := sha256.Sum256([]byte(endpoint))
	return "wp_" + hex.EncodeToString(sum[:12])
}

// checkPush refuses a subscription that is not a browser's: an endpoint
// that is not https (http only when AllowHTTP) or carries credentials,
// keys that are not a P-256 point and a 16-byte secret. The endpoint's
// address is checked when it is dialled, as a webhook's.
func (s *Service) checkPush(in PushSubscription) (PushSubscription, error) {
	in.Endpoint = strings.TrimSpace(in.Endpoint)
	u, err := url.Parse(in.Endpoint)
	if err != nil || u.Hostname() == "" || len(in.Endpoint) > 2000 {
		return in, ctalk.Errorf(ctalk.EInvalid, "the push endpoint must be the absolute https:// URL of the browser's push subscription")
	}
	if u.Scheme != "https" && !(s.cfg.AllowHTTP && u.Scheme == "http") || u.User != nil {
		return in, ctalk.Errorf(ctalk.EInvalid, "the push endpoint must be an https:// URL without a user name or password, as browsers give")
	}
	key, err := decodeKey(in.P256dh)
	if err == nil {
		_, err = ecdh.P256().NewPublicKey(key)
	}
	if err != nil {
		return in, ctalk.Errorf(ctalk.EInvalid, "the subscription's p256dh key must be the browser's P-256 public key in base64url; send the keys of PushSubscription.toJSON()")
	}
	if a, err := decodeKey(in.Auth); err != nil || len(a) != 16 {
		return in, ctalk.Errorf(ctalk.EInvalid, "the subscription's auth secret must be 16 bytes in base64url; send the keys of PushSubscription.toJSON()")
	}
	in.UserAgent = ctalk.Shorten(strings.TrimSpace(in.UserAgent), 200)
	return in, nil
}

func decodeKey(k string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(k), "="))
}

// SubscribePush stores a browser's push subscription for a person; the
// same browser subscribing again replaces its row.
//
// Returns EInvalid (endpoint, keys), EConflict (too many browsers).
func (s *Service) SubscribePush(ctx context.Context, c ctalk.Caller, in PushSubscription) (*PushBrowser, error) {
	in, err := s.checkPush(in)
	if err != nil {
		return nil, err
	}
	id, now := pushID(in.Endpoint), s.db.Now()
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		// On Postgres a person's subscribes take turns, so that two at once
		// cannot both pass the limit; SQLite's one writer does that anyway.
		if s.db.Engine == db.Postgres {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, db.LockID("notify-push", c.OrgID, c.UserID)); err != nil {
				return err
			}
		}
		var n int
		if err := tx.QueryRow(ctx, countPushSQL, c.OrgID, c.UserID, id).Scan(&n); err != nil {
			return err
		}
		if n >= MaxPushSubscriptions {
			return ctalk.Errorf(ctalk.EConflict, "push is on in %d browsers already, the limit; turn it off in one first", n)
		}
		_, err := tx.Exec(ctx, upsertPushSQL, c.OrgID, c.UserID, id, in.Endpoint, in.P256dh, in.Auth, in.UserAgent, now)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe to push: %w", err)
	}
	s.reachChanged(ctx, c.OrgID, c.UserID)
	return &PushBrowser{ID: id, Service: hostOf(in.Endpoint), UserAgent: in.UserAgent, CreatedAt: now}, nil
}

// UnsubscribePush removes a person's browser, named by its push id or by
// its subscription's endpoint.
//
// Returns ENotFound, also for another person's.
func (s *Service) UnsubscribePush(ctx context.Context, c ctalk.Caller, idOrEndpoint string) error {
	id := strings.TrimSpace(idOrEndpoint)
	if !strings.HasPrefix(id, "wp_") {
		id = pushID(id)
	}
	return s.deleteReach(ctx, c.OrgID, c.UserID, "push subscription", deletePushSQL, c.OrgID, c.UserID, id)
}

// PushBrowsers lists the browsers a person turned push on in.
//
// Returns only the database's errors.
func (s *Service) PushBrowsers(ctx context.Context, c ctalk.Caller) ([]*PushBrowser, error) {
	return db.All(ctx, s.db, "list push subscriptions", pushOfSQL, []any{c.OrgID, c.UserID}, func(row scanner) (*PushBrowser, error) {
		b := &PushBrowser{}
		var endpoint string
		err := row.Scan(&b.ID, &endpoint, &b.UserAgent, &b.CreatedAt)
		b.Service, b.CreatedAt = hostOf(endpoint), b.CreatedAt.UTC()
		return b, err
	})
}

func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return ""
}

func pushIDs(ctx context.Context, r db.Reader, orgID, userID string) ([]string, error) {
	return readIDs(ctx, r, "read push subscriptions", pushIDsSQL, orgID, userID)
}

// pushPayload is what the service worker receives, decrypted: what it
// shows, and the page a click opens.
type pushPayload struct {
	ID     string `json:"id"`
	Kind   Kind   `json:"kind"`
	Title  string `json:"title"`
	Body   string `json:"body,omitempty"`
	URL    string `json:"url"`
	Urgent bool   `json:"urgent,omitempty"`
}

// sendPush sends one delivery to a browser's push service, encrypted to
// its keys (RFC 8291) and signed with the server's VAPID key (RFC 8292).
// A push service answering 404 or 410 no longer knows the subscription,
// which is then deleted.
func (s *Service) sendPush(ctx context.Context, d *delivery) error {
	e := d.Event
	keys := s.vapid.Load()
	if keys == nil {
		return temporary("the VAPID keys are not loaded yet")
	}
	var sub webpush.Subscription
	err := s.db.QueryRow(ctx, pushToSendSQL, e.OrgID, e.UserID, d.Target).Scan(&sub.Endpoint, &sub.Keys.P256dh, &sub.Keys.Auth)
	if errors.Is(err, sql.ErrNoRows) {
		return permanent("push was turned off in that browser")
	}
	if err != nil {
		return temporary("read push subscription: %v", err)
	}
	m, err := s.compose(ctx, e)
	if err != nil {
		return temporary("compose: %v", err)
	}
	text := m.Text
	if m.Action != "" {
		text = strings.TrimSpace(text + "\n\n" + m.Action)
	}
	body, err := json.Marshal(pushPayload{ID: d.ID, Kind: e.Kind, Title: m.Title, Body: text, URL: m.URL, Urgent: e.Urgent})
	if err != nil {
		return permanent("build payload: %v", err)
	}
	resp, err := webpush.SendNotificationWithContext(ctx, body, &sub, s.pushOptions(keys, e.Urgent))
	if err != nil {
		s.log.Info("notifications: push service not reached", "push", d.Target, "error", cleanNetErr(err))
		if outbound.Blocked(err) {
			return permanent("could not reach the push service: %s", outbound.Unreachable)
		}
		return temporary("could not reach the push service: %s", outbound.Unreachable)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return s.pushOutcome(ctx, e, d.Target, resp.StatusCode)
}

func (s *Service) pushOptions(keys *vapidKeys, urgent bool) *webpush.Options {
	o := &webpush.Options{HTTPClient: s.http, Subscriber: s.pushContact(), TTL: 24 * 3600,
		VAPIDPublicKey: keys.public, VAPIDPrivateKey: keys.private, Urgency: webpush.UrgencyNormal, RecordSize: 2048}
	if urgent {
		o.Urgency = webpush.UrgencyHigh
	}
	return o
}

// pushContact is the VAPID subject push services may contact the operator
// by: PushContact, else PUBLIC_URL when it is https.
func (s *Service) pushContact() string {
	if s.cfg.PushContact != "" {
		return s.cfg.PushContact
	}
	if strings.HasPrefix(s.cfg.PublicURL, "https://") {
		return s.cfg.PublicURL
	}
	return "mailto:postmaster@" + hostOf(s.cfg.PublicURL)
}

// pushOutcome is the delivery's error for the push service's answer.
func (s *Service) pushOutcome(ctx context.Context, e *storedEvent, id string, code int) error {
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusNotFound || code == http.StatusGone:
		err := s.record(ctx, deletePushSQL, e.OrgID, e.UserID, id)
		if err != nil {
			s.log.Warn("notifications: cannot delete an expired push subscription", "push", id, "error", err)
		} else {
			s.reachChanged(ctx, e.OrgID, e.UserID)
		}
		return permanent("the push service no longer knows this browser (HTTP %d); its subscription is deleted", code)
	case code == http.StatusTooManyRequests || code >= 500:
		return temporary("the push service answered HTTP %d", code)
	}
	return permanent("the push service answered HTTP %d", code)
}
