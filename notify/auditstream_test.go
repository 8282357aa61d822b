package notify_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/notify"
)

// siem is a SIEM's collector on loopback: it checks every request's
// signature and keeps, in the order taken, each request's events (those it
// answered 2xx to).
type siem struct {
	*httptest.Server
	mu       sync.Mutex
	secret   string
	status   int
	requests [][]audit.Event
	ids      []string
	badSigs  int
	// delay holds each request, so that concurrent senders would overlap.
	delay time.Duration
}

func newSIEM(t *testing.T) *siem {
	r := &siem{status: http.StatusOK}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		time.Sleep(r.delay)
		r.mu.Lock()
		defer r.mu.Unlock()
		if code := verifySignature(r.secret, req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature"), body); code != 0 {
			r.badSigs++
			w.WriteHeader(code)
			return
		}
		if r.status/100 != 2 {
			w.WriteHeader(r.status)
			return
		}
		if ct := req.Header.Get("Content-Type"); ct != "application/x-ndjson" {
			t.Errorf("Content-Type %q, want application/x-ndjson", ct)
		}
		var events []audit.Event
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			var e audit.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("line is not an event: %s", sc.Bytes())
			}
			events = append(events, e)
		}
		r.requests = append(r.requests, events)
		r.ids = append(r.ids, req.Header.Get("webhook-id"))
		w.WriteHeader(r.status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *siem) set(status int) {
	r.mu.Lock()
	r.status = status
	r.mu.Unlock()
}

// seqs are the seqs of every event taken, in the order taken.
func (r *siem) seqs(t *testing.T, orgID string) []int64 {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.badSigs != 0 {
		t.Fatalf("%d requests with a bad signature", r.badSigs)
	}
	var out []int64
	for _, req := range r.requests {
		for _, e := range req {
			if e.OrgID != orgID {
				t.Fatalf("event of org %q sent to %s's stream", e.OrgID, orgID)
			}
			out = append(out, e.Seq)
		}
	}
	return out
}

// record writes n audit events of orgID and waits for them to be stored.
func record(t *testing.T, d *db.DB, orgID string, n int) {
	t.Helper()
	l := audit.NewLog(d, slog.New(slog.DiscardHandler))
	for range n {
		l.Record(audit.Event{At: time.Now(), OrgID: orgID, UserID: "a", Tool: "whoami", Outcome: "ok", RequestID: "r"})
	}
	l.Close()
}

// streamAll runs s's streams until none has work left.
func streamAll(t *testing.T, s *notify.Service) {
	t.Helper()
	for range 1000 {
		n, err := s.StreamAudit(dbtest.Operator())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
	t.Fatal("the streams never ran out of work")
}

func span(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// streamingService seeds d and returns a service that streams its audit
// log.
func streamingService(t *testing.T, d *db.DB) *notify.Service {
	t.Helper()
	seed(t, d)
	log := audit.NewLog(d, slog.New(slog.DiscardHandler))
	t.Cleanup(log.Close)
	s := newService(t, d, nil)
	s.SetAuditSource(log)
	return s
}

func seedBeta(t *testing.T, d *db.DB) {
	t.Helper()
	if _, err := dbtest.Exec(d, `INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ('beta', 'Beta', 'x', $1)`, d.Now()); err != nil {
		t.Fatal(err)
	}
}

// TestAuditStreamDelivers streams two orgs' audit logs to their own
// collectors: each gets, signed, every event of its org written after the
// stream was turned on, in the chain's order, and none of the other org's;
// a test line arrives and moves nothing; turned off, nothing more goes.
func TestAuditStreamDelivers(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := streamingService(t, d)
		seedBeta(t, d)
		ctx := dbtest.Operator()
		record(t, d, "acme", 3)
		acme, beta := newSIEM(t), newSIEM(t)
		st, secret, err := s.SetAuditStream(ctx, "acme", "a", acme.URL)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(secret, "whsec_") || st.Seq != 3 {
			t.Fatalf("stream %+v, secret %q: want it to start after event 3 with a whsec_ secret", st, secret)
		}
		acme.secret = secret
		if _, beta.secret, err = s.SetAuditStream(ctx, "beta", "x", beta.URL); err != nil {
			t.Fatal(err)
		}
		record(t, d, "acme", 5)
		record(t, d, "beta", 4)
		streamAll(t, s)
		if got, want := acme.seqs(t, "acme"), span(4, 8); !slices.Equal(got, want) {
			t.Fatalf("acme's collector took %v, want %v", got, want)
		}
		if got, want := beta.seqs(t, "beta"), span(1, 4); !slices.Equal(got, want) {
			t.Fatalf("beta's collector took %v, want %v", got, want)
		}
		if acme.ids[0] != "audit_acme_4-8" {
			t.Errorf("webhook-id %q, want audit_acme_4-8", acme.ids[0])
		}
		st, err = s.AuditStream(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if st.Seq != 8 || st.LastOKAt == nil || st.LastError != "" || st.URL != acme.URL || st.CreatedBy != "a" {
			t.Fatalf("stream after delivery = %+v", st)
		}

		if err := s.TestAuditStream(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		if got := acme.seqs(t, "acme"); !slices.Equal(got, append(span(4, 8), 0)) {
			t.Fatalf("after the test the collector took %v, want the test's seq 0 last", got)
		}

		if err := s.StopAuditStream(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		record(t, d, "acme", 2)
		streamAll(t, s)
		if got := acme.seqs(t, "acme"); len(got) != 6 {
			t.Fatalf("after turning off the collector took %v", got)
		}
		if st, err := s.AuditStream(ctx, "acme"); err != nil || st != nil {
			t.Fatalf("stream after turning off = %+v, %v", st, err)
		}
		if err := s.TestAuditStream(ctx, "acme"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Fatalf("test of a stream turned off: %v, want not found", err)
		}
	})
}

// TestAuditStreamReceiverDown keeps the collector failing while events
// are written: the admin sees the error, the cursor stays; once it is back,
// every event arrives, in order, none skipped.
func TestAuditStreamReceiverDown(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		s := streamingService(t, d)
		ctx := dbtest.Operator()
		r := newSIEM(t)
		var err error
		if _, r.secret, err = s.SetAuditStream(ctx, "acme", "a", r.URL); err != nil {
			t.Fatal(err)
		}
		r.set(http.StatusServiceUnavailable)
		for range 3 {
			record(t, d, "acme", 4)
			if _, err := s.StreamAudit(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond) // past the backoff of RetryMax
		}
		st, err := s.AuditStream(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if st.Seq != 0 || st.FailingSince == nil || !strings.Contains(st.LastError, "503") {
			t.Fatalf("stream while the collector fails = %+v", st)
		}
		r.set(http.StatusOK)
		time.Sleep(10 * time.Millisecond)
		streamAll(t, s)
		if got, want := r.seqs(t, "acme"), span(1, 12); !slices.Equal(got, want) {
			t.Fatalf("collector took %v, want %v", got, want)
		}
		if st, _ := s.AuditStream(ctx, "acme"); st.Seq != 12 || st.FailingSince != nil || st.LastError != "" {
			t.Fatalf("stream once back = %+v", st)
		}
	})
}

// TestAuditStreamTwoReplicas runs two replicas' streams at once, each on
// its own pool to one database, while events are written: the collector
// takes every event once, in the chain's order.
func TestAuditStreamTwoReplicas(t *testing.T) {
	for _, e := range dbtest.Engines {
		t.Run(string(e), func(t *testing.T) {
			dbs, replicas := twoReplicasOn(t, e, func(*notify.Config) {})
			ctx, cancel := context.WithCancel(dbtest.Operator())
			defer cancel()
			for i, s := range replicas {
				log := audit.NewLog(dbs[i], slog.New(slog.DiscardHandler))
				t.Cleanup(log.Close)
				s.SetAuditSource(log)
			}
			r := newSIEM(t)
			r.delay = 2 * time.Millisecond
			var err error
			if _, r.secret, err = replicas[0].SetAuditStream(ctx, "acme", "a", r.URL); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for _, s := range replicas {
				wg.Go(func() {
					for ctx.Err() == nil {
						if _, err := s.StreamAudit(ctx); err != nil && ctx.Err() == nil {
							t.Error(err)
							return
						}
					}
				})
			}
			const writes, each = 20, 15
			for i := range writes {
				record(t, dbs[i%2], "acme", each)
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				st, err := replicas[1].AuditStream(ctx, "acme")
				if err != nil {
					t.Fatal(err)
				}
				if st.Seq == writes*each {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("stream stopped at %d of %d", st.Seq, writes*each)
				}
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
			wg.Wait()
			if got, want := r.seqs(t, "acme"), span(1, writes*each); !slices.Equal(got, want) {
				t.Fatalf("collector took %v, want every event once in order", got)
			}
		})
	}
}
