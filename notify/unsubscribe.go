package notify

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// unsubKeyName names the unsubscribe links' key in notify_keys.
const unsubKeyName = "unsubscribe"

// loadKeys reads the server's keys (the unsubscribe links', the VAPID
// pair), making them at the first start.
func (s *Service) loadKeys(ctx context.Context) error {
	if s.unsubKey == nil {
		if err := s.loadKey(ctx); err != nil {
			return err
		}
	}
	if s.vapid.Load() == nil {
		return s.loadVAPID(ctx)
	}
	return nil
}

// loadKey reads the unsubscribe key, making it at the first start; every
// replica reads the one that won.
func (s *Service) loadKey(ctx context.Context) error {
	var secret string
	err := s.db.QueryRow(ctx, keySQL, unsubKeyName).Scan(&secret)
	if errors.Is(err, sql.ErrNoRows) {
		var b [32]byte
		rand.Read(b[:])
		err = s.db.Write(ctx, func(q db.Querier) error {
			_, err := q.Exec(ctx, insertKeySQL, unsubKeyName, base64.StdEncoding.EncodeToString(b[:]), s.db.Now())
			return err
		})
		if err == nil {
			err = s.db.QueryRow(ctx, keySQL, unsubKeyName).Scan(&secret)
		}
	}
	if err != nil {
		return fmt.Errorf("load the unsubscribe key: %w", err)
	}
	key, err := base64.StdEncoding.DecodeString(secret)
	if err != nil {
		return fmt.Errorf("the unsubscribe key: %w", err)
	}
	s.unsubKey = key
	return nil
}

// UnsubscribeTTL is how long an unsubscribe link works after its mail
// was sent.
const UnsubscribeTTL = 365 * 24 * time.Hour

// unsubscribeToken is the token of the one-click unsubscribe link of kind
// for a person, good until UnsubscribeTTL from now: the kind, readable,
// then whom it is for and until when, sealed with AES-GCM under a key
// derived for these links alone, the kind bound in as additional data. It
// shows no id, can do nothing but turn that kind's email off, and no
// change of it, the kind's included, passes.
func (s *Service) unsubscribeToken(orgID, userID string, kind Kind) string {
	aead := s.unsubAEAD()
	plain := binary.BigEndian.AppendUint64(nil, uint64(s.db.Now().Add(UnsubscribeTTL).Unix()))
	plain = append(plain, orgID+"\x00"+userID...)
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	rand.Read(nonce)
	return string(kind) + "." + base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, unsubAD(kind)))
}

// unsubAEAD is the cipher of the unsubscribe links, keyed by a key derived
// from the server's unsubscribe key for them alone.
func (s *Service) unsubAEAD() cipher.AEAD {
	key, err := hkdf.Key(sha256.New, s.unsubKey, nil, "ctalk unsubscribe link v2", 32)
	if err != nil {
		panic(err) // 32 bytes of SHA-256's HKDF cannot fail
	}
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	return aead
}

// unsubAD is the additional data that binds a link's kind to its sealed
// part.
func unsubAD(kind Kind) []byte { return []byte("ctalk unsubscribe\x00" + string(kind)) }

// UnsubscribeURL is the one-click unsubscribe link of kind for a person.
func (s *Service) UnsubscribeURL(orgID, userID string, kind Kind) string {
	return s.cfg.PublicURL + UnsubscribePath + "?t=" + s.unsubscribeToken(orgID, userID, kind)
}

// UnsubscribePath is where the unsubscribe links point.
const UnsubscribePath = "/notifications/unsubscribe"

// parseUnsubscribe checks a token and returns what it names.
func (s *Service) parseUnsubscribe(token string) (orgID, userID string, kind Kind, err error) {
	bad := ctalk.Errorf(ctalk.EInvalid, "this unsubscribe link is not valid; change your notification settings on your profile page instead")
	if s.unsubKey == nil {
		return "", "", "", ctalk.Errorf(ctalk.EUnavailable, "notifications are starting; try again in a moment")
	}
	k, sealed, ok := strings.Cut(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(sealed)
	aead := s.unsubAEAD()
	if !ok || err != nil || len(raw) < aead.NonceSize() || !slices.Contains(Kinds, Kind(k)) {
		return "", "", "", bad
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], unsubAD(Kind(k)))
	if err != nil || len(plain) < 8 {
		return "", "", "", bad
	}
	if until := time.Unix(int64(binary.BigEndian.Uint64(plain)), 0); !s.db.Now().Before(until) {
		return "", "", "", ctalk.Errorf(ctalk.EInvalid, "this unsubscribe link is more than a year old and no longer works; change your notification settings on your profile page instead")
	}
	org, user, ok := strings.Cut(string(plain[8:]), "\x00")
	if !ok {
		return "", "", "", bad
	}
	return org, user, Kind(k), nil
}

// Unsubscribe turns email off for the kind a token names, and nothing
// else; it is idempotent.
//
// Returns EInvalid for a bad token.
func (s *Service) Unsubscribe(ctx context.Context, token string) (Kind, error) {
	orgID, userID, kind, err := s.parseUnsubscribe(token)
	if err != nil {
		return "", err
	}
	// Nobody signs in: the sealed link names the org it acts in.
	ctx = ctalk.WithOrg(ctx, orgID)
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		set, err := settingsOf(ctx, tx, orgID, userID)
		if err != nil {
			return err
		}
		chs, ok := set.Channels[kind]
		if !ok {
			chs = DefaultChannels(kind, s.EmailEnabled())
		}
		set.Channels[kind] = slices.DeleteFunc(slices.Clone(chs), func(c string) bool { return c == ChannelEmail })
		if set.Channels[kind] == nil {
			set.Channels[kind] = []string{}
		}
		b, err := json.Marshal(set.Channels)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, unsubscribeSQL, orgID, userID, string(b), s.db.Now())
		return err
	})
	if err != nil {
		return "", fmt.Errorf("unsubscribe: %w", err)
	}
	s.reachChanged(ctx, orgID, userID)
	return kind, nil
}

var unsubscribePage = template.Must(template.New("unsubscribe").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>Unsubscribe · ctalk</title>
<style>body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;line-height:1.5}button{font:inherit;padding:.5rem 1rem}</style></head>
<body><main><h1>ctalk emails</h1>
{{if .Done}}<p role="status">You will no longer get emails about <strong>{{.Kind}}</strong>. Your other notifications are unchanged; your profile page has every setting.</p>
{{else if .Error}}<p role="alert">{{.Error}}</p>
{{else}}<p>Stop emails about <strong>{{.Kind}}</strong>? Nothing else changes.</p>
<form method="post" action="{{.Action}}"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>{{end}}
</main></body></html>`))

// UnsubscribeHandler serves the unsubscribe links: GET asks (mail
// scanners follow links, and must not unsubscribe anyone), POST turns that
// kind's email off, with no login and no cookie, as RFC 8058's one-click
// POST from the mail client needs.
func (s *Service) UnsubscribeHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := r.URL.Query().Get("t")
		data := struct {
			Done        bool
			Kind, Error string
			Action      string
		}{Action: UnsubscribePath + "?t=" + token}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			_, _, kind, err := s.parseUnsubscribe(token)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				data.Error = ctalk.ErrorMessage(err)
			}
			data.Kind = kindLabel(kind)
		case http.MethodPost:
			kind, err := s.Unsubscribe(r.Context(), token)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				data.Error = ctalk.ErrorMessage(err)
			}
			data.Done, data.Kind = err == nil, kindLabel(kind)
		default:
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		unsubscribePage.Execute(w, data)
	})
}

// kindLabel names a kind for people.
func kindLabel(k Kind) string {
	switch k {
	case KindQuestion:
		return "questions waiting for you"
	case KindDraft:
		return "your agent's answers waiting for approval"
	case KindPost:
		return "your agent's channel posts waiting for approval"
	case KindAnswered:
		return "answers to your questions"
	case KindDeclined:
		return "declined questions"
	case KindMention:
		return "mentions"
	case KindUrgent:
		return "urgent channel posts"
	case KindReminder:
		return "reminders of waiting questions"
	case KindStillWaiting:
		return "your questions still waiting"
	}
	return string(k)
}
